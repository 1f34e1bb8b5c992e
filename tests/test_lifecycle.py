"""The unit's lifecycle through labgrid's own drivers (harness/links/lifecycle.py): a target's power driver
cycles the unit, a target without a flasher says so. labgrid's ExternalPowerDriver runs here against a
stand-in for a switched outlet (commands that log what they were asked); the QEMU implementation is
tested with a running unit in tests/test_qemu_firmware.py."""
from __future__ import annotations

import os
import sys

import pytest

from unohil.harness.links.lifecycle import LabgridLifecycle, LifecycleError

REQUIRED = bool(os.environ.get("UNOHIL_REQUIRE_LABGRID"))


@pytest.fixture
def labgrid():
    try:
        import labgrid
    except ImportError:
        if REQUIRED:
            pytest.fail("labgrid is not installed and UNOHIL_REQUIRE_LABGRID is set")
        pytest.skip("labgrid is not installed (pip install 'uno-hil[labgrid]')")
    return labgrid


def outlet(labgrid, log, cycle: str | None):
    """A target whose power is labgrid's ExternalPowerDriver, each command appending a word to log."""
    from labgrid.driver import ExternalPowerDriver
    target = labgrid.Target("bench-unit")
    say = f"{sys.executable} -c \"import sys; open(sys.argv[1], 'a').write(sys.argv[2] + ' ')\" {log}"
    ExternalPowerDriver(target, "power", cmd_on=f"{say} on", cmd_off=f"{say} off",
                        cmd_cycle=None if cycle is None else f"{say} {cycle}", delay=0.0)
    return target


def test_a_power_driver_power_cycles_the_unit(labgrid, tmp_path):
    log = tmp_path / "outlet.log"
    LabgridLifecycle(outlet(labgrid, log, "cycle")).power_cycle()
    assert log.read_text().split() == ["cycle"]
    # without a cycle command of its own labgrid's driver switches off, then on
    log.unlink()
    LabgridLifecycle(outlet(labgrid, log, None)).power_cycle()
    assert log.read_text().split() == ["off", "on"]


def test_a_target_without_a_flasher_says_so(labgrid, tmp_path):
    lifecycle = LabgridLifecycle(outlet(labgrid, tmp_path / "outlet.log", "cycle"))
    with pytest.raises(LifecycleError, match=r"labgrid target bench-unit has no BootstrapProtocol driver to flash "
                                             r"unit\.elf with"):
        lifecycle.flash("unit.elf")


def test_a_power_command_that_fails_is_one_error_naming_the_driver(labgrid, tmp_path):
    from labgrid.driver import ExternalPowerDriver
    target = labgrid.Target("bench-unit")
    ExternalPowerDriver(target, "power", cmd_on="false", cmd_off="false", cmd_cycle="false", delay=0.0)
    with pytest.raises(LifecycleError, match="ExternalPowerDriver could not power-cycle"):
        LabgridLifecycle(target).power_cycle()


def environment(tmp_path, log) -> str:
    """A labgrid environment file whose target `bench` is powered by ExternalPowerDriver's logging commands."""
    say = f"{sys.executable} -c \\\"import sys; open(sys.argv[1], 'a').write(sys.argv[2] + ' ')\\\" {log}"
    env = tmp_path / "env.yaml"
    env.write_text(f"""targets:
  bench:
    drivers:
      ExternalPowerDriver:
        cmd_on: "{say} on"
        cmd_off: "{say} off"
        cmd_cycle: "{say} cycle"
        delay: 0.0
""")
    return str(env)


def test_lifecycle_names_a_target_of_a_labgrid_environment(labgrid, tmp_path):
    from unohil.harness.errors import DeviceURLError
    from unohil.harness.links.lifecycle import labgrid_lifecycle
    log = tmp_path / "outlet.log"
    env = environment(tmp_path, log)
    labgrid_lifecycle(f"{env}#bench").power_cycle()
    assert log.read_text().split() == ["cycle"]
    with pytest.raises(DeviceURLError, match="has no target 'main'"):
        labgrid_lifecycle(env)
    with pytest.raises(DeviceURLError, match="no such labgrid environment file"):
        labgrid_lifecycle(str(tmp_path / "none.yaml"))


def test_firmware_through_a_target_without_a_flasher_is_one_error(labgrid, tmp_path):
    import subprocess
    env = environment(tmp_path, tmp_path / "outlet.log")
    image = tmp_path / "unit.elf"
    image.write_bytes(b"\x7fELF")
    r = subprocess.run([sys.executable, "-m", "unohil.harness.cli", "run", "--device", "emu://showdown",
                        "--lifecycle", f"{env}#bench", "--firmware", str(image)], capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), timeout=120)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr
    assert "labgrid target bench has no BootstrapProtocol driver to flash" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
