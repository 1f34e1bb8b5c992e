"""The interactive unit in a real terminal: `unohil emulate KIND --interactive` run by a shell in a tmux
pane on a private tmux server, keys sent with send-keys, the screen read with capture-pane.

Waits are bounded polls of what the pane or a process shows, never durations."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

TMUX = shutil.which("tmux") or "/usr/bin/tmux"
WAIT_S = 30             # the longest any one wait lasts before the test fails saying what it waited for
POLL_S = 0.05


def wait_until(probe, what: str, timeout: float = WAIT_S):
    """probe() until it returns something true; AssertionError naming what was awaited (and the last
    thing probe saw, if it returns (ok, seen)) after timeout seconds."""
    deadline = time.monotonic() + timeout
    seen = None
    while True:
        got = probe()
        ok, seen = got if isinstance(got, tuple) else (got, seen)
        if ok:
            return ok
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout} s for {what}; last seen:\n{seen}")
        time.sleep(POLL_S)


class TmuxUnit:
    """One interactive unit in a shell in a tmux pane of its own tmux server (killed in close())."""

    def __init__(self, tmp: Path, kind: str, *options: str):
        self.server = f"unohil-{uuid.uuid4().hex[:12]}"
        self.path_file = tmp / f"{kind}.path"
        self.target = "unit:0.0"
        command = [sys.executable, "-m", "unohil.harness.cli", "emulate", kind, "--interactive",
                   "--path-file", str(self.path_file), *options]
        env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        self._tmux("new-session", "-d", "-s", "unit", "-x", "160", "-y", "48", "sh", env=env)
        # the shell reports how the command ended; its own prompt then shows the terminal as it was left
        self.send_line(f"cd {shlex.quote(os.getcwd())} && {shlex.join(command)}; echo \"exit status $?\"")

    def _tmux(self, *args: str, env=None) -> str:
        return subprocess.run([TMUX, "-L", self.server, *args], check=True, capture_output=True, text=True,
                              env=env, timeout=WAIT_S).stdout

    def send_line(self, text: str) -> None:
        self._tmux("send-keys", "-t", self.target, "-l", text)
        self._tmux("send-keys", "-t", self.target, "Enter")

    def keys(self, text: str) -> None:
        """Type text (each character a key)."""
        self._tmux("send-keys", "-t", self.target, "-l", text)

    def key(self, name: str) -> None:
        """A named key: C-c, Escape..."""
        self._tmux("send-keys", "-t", self.target, name)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", self.target)

    def wait_screen(self, pattern: str, what: str | None = None) -> re.Match:
        regex = re.compile(pattern, re.M)

        def probe():
            text = self.screen()
            return regex.search(text), text
        return wait_until(probe, what or f"/{pattern}/ on the screen")

    def path(self) -> str:
        wait_until(lambda: self.path_file.exists(), f"{self.path_file} (the unit's path)")
        return self.path_file.read_text().strip()

    def close(self) -> None:
        subprocess.run([TMUX, "-L", self.server, "kill-server"], capture_output=True, timeout=WAIT_S)


class Recorder:
    """`unohil record --device PATH -o FILE` in a process of its own, its live lines read as they come."""

    def __init__(self, device: str, output: Path, *options: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", "record", "--device", device,
                                      "-o", str(output), *options],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, pattern: str, count: int = 1) -> None:
        """Until count lines of the recorder's live view match pattern."""
        regex = re.compile(pattern)
        wait_until(lambda: (sum(1 for line in list(self.lines) if regex.search(line)) >= count,
                            "\n".join(self.lines[-15:])),
                   f"{count} recorder line(s) matching /{pattern}/")

    def stop(self) -> int:
        """Ctrl-C, as a person at the bench stops it; its exit status."""
        self.proc.send_signal(signal.SIGINT)
        return self.finish()

    def kill(self) -> None:
        """If it still runs (a test failed before stopping it): end it, so it holds no pty."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=WAIT_S)

    def finish(self) -> int:
        try:
            rc = self.proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self._reader.join(timeout=WAIT_S)
        return rc
