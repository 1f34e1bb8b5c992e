"""A command's round trip beside raw echoes, turn about: what the protocol and both ends' code add to a pty.

Sample by sample, the bench times a STATUS on the unit's link (the host time before STATUS_GET is
written to the host time its reply reached the waiting code); a STATUS answered by a canned responder
(python -m unohil.harness.measure.link_floor status: a table lookup, an echo's cost), which is the harness's
own share; a 16-byte packet echoed by a Python responder (python -m unohil.harness.measure.link_floor echo);
the same by a C responder compiled at bench time with the system's C compiler. Each on a pty of its
own, each after the same pause, so each sample sees the machine the others of its turn saw, and the
ratios and the fixed cost (a STATUS less the echo beside it) are of one run. Without a C compiler the
C figures are left out and the run says why.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

from unohil.harness.measure.latency import _pty_pair

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

    def __init__(self, argv_before_fd: list[str], ready_line: bool = False):
        master, self.fd = _pty_pair()
        self.proc = subprocess.Popen(argv_before_fd + [str(master)], pass_fds=(master,),
                                     stdout=subprocess.PIPE if ready_line else None, text=True)
        os.close(master)
        if ready_line and self.proc.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError(f"{argv_before_fd[-1]} responder did not start")

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


def _status_us(d) -> int:
    t0 = d.now_us()
    d.status()
    return d.now_us() - t0


def paired_round_trips(d, samples: int, stop=None) -> dict:
    """STATUS round trips on the driver's link, each beside a canned responder's STATUS, a Python and a C
    echo's (us). Returns lists command_rtt_us, canned_status_us, echo_python_us, echo_c_us (empty without
    a compiler) and c_echo: "compiled at bench time" or why there is no C echo."""
    from unohil.harness.links import FdLink
    from unohil.harness.session.driver import Driver
    out: dict = {"command_rtt_us": [], "canned_status_us": [], "echo_python_us": [], "echo_c_us": []}
    floor = [sys.executable, "-m", "unohil.harness.measure.link_floor"]
    with tempfile.TemporaryDirectory(prefix="unohil-echo-") as tmp:
        exe, why = build_c_echo(tmp)
        out["c_echo"] = why or "compiled at bench time"
        responders = [Echo(floor + ["status"], ready_line=True)]
        try:
            canned = Driver(FdLink("canned-status", fd=responders[0].fd))
            turn = [("command_rtt_us", lambda: _status_us(d)), ("canned_status_us", lambda: _status_us(canned))]
            responders.append(Echo(floor + ["echo"]))
            turn.append(("echo_python_us", responders[-1].round_trip))
            if exe is not None:
                responders.append(Echo([exe]))
                turn.append(("echo_c_us", responders[-1].round_trip))
            for _ in range(samples):
                if stop is not None and stop():
                    break
                for key, sample in turn:
                    time.sleep(PAUSE_S)
                    out[key].append(sample())
        finally:
            for responder in responders:
                responder.close()
    return out


def fixed_costs(command: list[int], echo: list[int]) -> list[int]:
    """Each STATUS less the echo measured beside it: what the protocol and both ends' code add."""
    return [c - e for c, e in zip(command, echo)]
