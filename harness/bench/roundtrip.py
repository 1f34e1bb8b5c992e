"""A command's round trip beside raw echoes, turn about: what the protocol and both ends' code add to a pty.

Sample by sample, the bench times a STATUS on the unit's link (the host time before STATUS_GET is
written to the host time its reply reached the waiting code), then a 16-byte packet echoed by a
Python responder (python -m unohil.harness.bench.floor echo) on a pty of its own, then the same by a
C responder compiled at bench time with the system's C compiler. Each pause between them is the same,
so each echo sample sees the machine its STATUS sample saw, and the ratios and the fixed cost (a
STATUS less the echo beside it) are of one run. Without a C compiler the C figures are left out and
the run says why.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

from unohil.harness.bench.latency import _pty_pair

PACKET = bytes(16)
PAUSE_S = 0.001      # between samples, as between a race's commands: every sample starts from the same rest

C_ECHO_SOURCE = r"""
#include <stdlib.h>
#include <unistd.h>
/* echo every byte read on the descriptor argv[1] until end of file or an error */
int main(int argc, char **argv) {
    char buf[4096];
    int fd = atoi(argv[1]);
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf), off = 0;
        if (n <= 0) return 0;
        while (off < n) {
            ssize_t w = write(fd, buf + off, (size_t)(n - off));
            if (w <= 0) return 0;
            off += w;
        }
    }
}
"""


def build_c_echo(directory: str) -> tuple[str | None, str | None]:
    """The C echo responder compiled into directory: (its path, None), or (None, why there is none)."""
    cc = next((c for c in (os.environ.get("CC"), "cc", "gcc", "clang") if c and shutil.which(c)), None)
    if cc is None:
        return None, "no C compiler (cc, gcc, clang or $CC) on PATH: the C echo's figures are left out"
    src, exe = os.path.join(directory, "echo.c"), os.path.join(directory, "echo")
    with open(src, "w") as fh:
        fh.write(C_ECHO_SOURCE)
    done = subprocess.run([cc, "-O2", "-o", exe, src], capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"{cc} could not build the C echo: {done.stderr.strip()[:200]}"
    return exe, None


class Echo:
    """A responder process echoing a pty's bytes; round_trip() times one packet through it."""

    def __init__(self, argv_before_fd: list[str]):
        master, self.fd = _pty_pair()
        self.proc = subprocess.Popen(argv_before_fd + [str(master)], pass_fds=(master,))
        os.close(master)

    def round_trip(self) -> int:
        t0 = time.monotonic_ns() // 1000
        os.write(self.fd, PACKET)
        got = 0
        while got < len(PACKET):
            got += len(os.read(self.fd, len(PACKET) - got))
        return time.monotonic_ns() // 1000 - t0

    def close(self) -> None:
        os.close(self.fd)       # the responder reads end of file (or EIO) and ends
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def paired_round_trips(d, samples: int, stop=None) -> dict:
    """STATUS round trips on the driver's link, each beside a Python and a C echo's (us). Returns lists
    command_rtt_us, echo_python_us, echo_c_us (empty without a compiler) and c_echo: the compiled
    responder's path or why there is none."""
    out: dict = {"command_rtt_us": [], "echo_python_us": [], "echo_c_us": []}
    with tempfile.TemporaryDirectory(prefix="unohil-echo-") as tmp:
        exe, why = build_c_echo(tmp)
        out["c_echo"] = why or "compiled at bench time"
        echoes = [("echo_python_us", Echo([sys.executable, "-m", "unohil.harness.bench.floor", "echo"]))]
        try:
            if exe is not None:
                echoes.append(("echo_c_us", Echo([exe])))
            for _ in range(samples):
                if stop is not None and stop():
                    break
                time.sleep(PAUSE_S)
                t0 = d.now_us()
                d.status()
                out["command_rtt_us"].append(d.now_us() - t0)
                for key, echo in echoes:
                    time.sleep(PAUSE_S)
                    out[key].append(echo.round_trip())
        finally:
            for _, echo in echoes:
                echo.close()
    return out


def fixed_costs(command: list[int], echo: list[int]) -> list[int]:
    """Each STATUS less the echo measured beside it: what the protocol and both ends' code add."""
    return [c - e for c, e in zip(command, echo)]
