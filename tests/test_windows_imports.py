"""The package imports and runs where there is no fcntl, termios or pty (Windows): every module but
the one that plays a unit on a terminal (emulator/terminal.py, which only --interactive imports),
and an emu:// and a socket:// scenario run, the second claimed through hostlock's fallback."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CODE = r'''
import sys
for name in ("fcntl", "termios", "pty"):
    sys.modules[name] = None            # unimportable, as on Windows; before anything imports them
import importlib, os, pkgutil, threading

SERVES_PTYS = {"unohil.emulator.terminal"}
imported = []
for package in ("unohil.protocol", "unohil.harness", "unohil.emulator"):
    def fail(name):
        raise ImportError(f"{name} does not import without fcntl, termios and pty")
    for info in pkgutil.walk_packages(importlib.import_module(package).__path__, package + ".", onerror=fail):
        if info.name in SERVES_PTYS or info.name.endswith(".__main__"):     # scripts: they run when imported
            continue
        importlib.import_module(info.name)
        imported.append(info.name)
assert not SERVES_PTYS & set(sys.modules), "a pty-serving module was imported by another"
try:
    import unohil.emulator.terminal
except ImportError:
    pass
else:
    raise AssertionError("termios is importable: this test would prove nothing")

from unohil.emulator.clock import RealClock
from unohil.emulator.device import Device
from unohil.emulator.serve import Server, TcpPort
from unohil.harness.cli.app import main
from unohil.harness.links import hostlock

clock = RealClock()
server = Server(clock)
unit = Device("showdown", clock, salt=os.urandom(8))
port = TcpPort("127.0.0.1", 0)
server.add(unit, port)
unit.start()
threading.Thread(target=server.run, daemon=True).start()
scenario = ["run", "fixtures/scenarios/showdown/first_press.yaml", "-k", "clean and win", "--format", "lines"]
emu = main(scenario)
tcp = main(scenario + ["--device", port.name])
server.stop()
print(len(imported), hostlock._lock.__name__, port.name, emu, tcp)
'''


def test_the_package_imports_and_runs_scenarios_without_fcntl_termios_or_pty():
    out = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    modules, lock, url, emu, tcp = out.stdout.splitlines()[-1].split()
    assert int(modules) > 100 and lock == "_lockf" and url.startswith("socket://127.0.0.1:")
    assert (emu, tcp) == ("0", "0"), out.stdout + out.stderr
    assert out.stdout.count("pass      clean win for") == 4, out.stdout


HOLD = r'''
import sys
sys.modules["fcntl"] = None
from unohil.harness.errors import DeviceBusy
from unohil.harness.links import claim, hostlock
assert hostlock._lock is hostlock._lockf
c = claim.Claim("socket://rig:1", "tcp 192.0.2.5:1")
if sys.argv[1] == "hold":
    c.take()
    print("held", flush=True)
    sys.stdin.readline()
else:
    try:
        c.take()
    except DeviceBusy as exc:
        print(exc.holder["pid"])
'''


def test_without_fcntl_the_lock_still_refuses_another_process():
    holder = subprocess.Popen([sys.executable, "-c", HOLD, "hold"], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        other = subprocess.run([sys.executable, "-c", HOLD, "try"], cwd=ROOT, capture_output=True, text=True,
                               timeout=60)
        assert other.stdout.strip() == str(holder.pid), other.stderr
    finally:
        holder.communicate("\n", timeout=30)
    again = subprocess.run([sys.executable, "-c", HOLD, "try"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout == "", again.stderr      # let go with its holder
