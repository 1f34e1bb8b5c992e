"""The sample firmware on an emulated Cortex-M3 (clib/firmware/port_mps2_an385.c under qemu-system-arm's
mps2-an385), reached through the qemu: device URL, as a firmware team would run its build before it has
a board.

The quick acceptance run and the deliberate fault run in every suite; the whole acceptance run (conform:
CONFORMS, then the kind's whole library, for each kind) runs when UNOHIL_FIRMWARE_CONFORM=1, as the POSIX port's."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading

import pytest

from unohil.harness.errors import DeviceURLError
from unohil.harness.links import qemu
from tools.clib_build import ROOT, BuildError, make, tool

FULL = bool(os.environ.get("UNOHIL_FIRMWARE_CONFORM"))
KINDS = ("showdown", "flash", "launcher")      # an ELF each: `make -C clib qemu`


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """make -C clib qemu: the unit's ELF and its deliberate-fault variant."""
    for name in ("arm-none-eabi-gcc", "qemu-system-arm"):
        path, required = tool(name, "UNOHIL_REQUIRE_QEMU")
        if path is None:
            if required:
                pytest.fail(f"no {name} and UNOHIL_REQUIRE_QEMU is set")
            pytest.skip(f"no {name}")
    build = tmp_path_factory.mktemp("qemu")
    try:
        make(build, "qemu")
    except BuildError as exc:
        pytest.fail(str(exc))
    return {"unit": build / "showdown-mps2_an385.elf", "rx16": build / "showdown-mps2_an385-rx16.elf",
            **{kind: build / f"{kind}-mps2_an385.elf" for kind in KINDS}}


def unohil(*args, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "unohil.harness.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def test_the_image_fits_the_board_and_its_boot_parameters_are_where_the_launcher_writes_them(images):
    out = subprocess.run(["arm-none-eabi-nm", str(images["unit"])], capture_output=True, text=True,
                         check=True).stdout
    symbols = {name: int(addr, 16) for addr, _, name in (line.split() for line in out.splitlines() if line.count(" ") == 2)}
    assert symbols["boot_params"] == qemu.BOOT_PARAMS_ADDR
    # the linker script holds the unit to 32 kB of RAM with 2 kB of stack: the image linked, so it fits
    assert symbols["__stack_top"] == 0x20000000 + 32 * 1024


def test_device_url_mistakes_are_one_clear_error(images, tmp_path):
    not_elf = tmp_path / "x.elf"
    not_elf.write_bytes(b"hello")
    cases = {
        "qemu:": "give the firmware image",
        f"qemu:{tmp_path}/missing.elf": "no firmware image",
        f"qemu:{not_elf}": "not a 32-bit Arm ELF image",
        f"qemu:{images['unit']}?machine=microbit": "no firmware port for machine 'microbit'",
        f"qemu:{images['unit']}?icount=fast": "icount must be off, auto or a shift",
        f"qemu:{images['unit']}?colour=red": "unknown option 'colour'",
    }
    for url, words in cases.items():
        with pytest.raises(DeviceURLError, match=re.escape(words)):
            qemu.parse(url)
    r = unohil("conform", "--device", f"qemu:{tmp_path}/missing.elf", timeout=60)
    assert r.returncode == 2 and "no firmware image" in r.stderr and "Traceback" not in r.stderr


def test_the_unit_answers_and_prints_its_state_changes_on_its_console(images):
    """IDENTITY through the qemu: link; the firmware's console (UART1) says each event, in the order
    and at the device times of the protocol's own events."""
    from unohil.harness.session.driver import Driver
    from unohil.protocol import msg
    with Driver.open(f"qemu:{images['unit']}?serial=77&seed=5") as d:
        assert (d.identity.serial, d.identity.seed) == (77, 5)
        d.command(msg.RESET(mode=0))
        d.input("load_cards", "press", 3)
        d.input("timer", "press")
        state = d.wait_for(lambda f: f.msg.NAME == "STATE", 1_000_000, "STATE")
        d.command(msg.STATUS_GET())
        lines = [ln.text for ln in d.link.console.lines()]
    assert lines[0] == "showdown firmware on mps2-an385"
    assert re.fullmatch(r"0 boot reason 0", lines[1])
    wanted = f"{state.time_us} state {state.msg.previous} -> {state.msg.state}"
    assert wanted in lines, lines


@pytest.mark.parametrize("kind", KINDS)
def test_the_firmware_passes_the_quick_acceptance_run_under_qemu(images, tmp_path, kind):
    """Each kind's ELF (the same unit core and port, the kind's game): conform --quick, nothing failed."""
    r = unohil("conform", "--device", f"qemu:{images[kind]}", "--quick", "-q", "--json", str(tmp_path / "c.json"),
               "--junit", str(tmp_path / "c.xml"), "--store", "off", timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr
    checks = json.loads((tmp_path / "c.json").read_text())["checks"]
    assert len(checks) > 50
    assert [c for c in checks if c["status"] not in ("pass", "skip")] == []
    assert re.search(r"\d+ passed, 0 failed, \d+ skipped .*: PARTIAL \(quick run", r.stdout), r.stdout[-2000:]
    _console_of_each_check_is_placed_on_the_units_clock(checks, tmp_path / "c.xml")


def _console_of_each_check_is_placed_on_the_units_clock(checks: list, junit):
    """The unit's console (its UART1, read by default) in each check's record: the firmware starts each line
    with its own device time, and the state changes it logs as they happen; conform's device time for the
    line, through the clock sync from the host time of its read, lands within the read's latency of it."""
    import xml.etree.ElementTree as ET
    lines = [(c["name"], ln) for c in checks for ln in c.get("console", [])]
    assert len(lines) > 20 and all(a["host_us"] <= b["host_us"] for (_, a), (_, b) in zip(lines, lines[1:]))
    states = [(int(ln["text"].split()[0]), ln["dev_us"]) for _, ln in lines
              if re.match(r"\d+ state ", ln["text"]) and ln["dev_us"] is not None]
    assert len(states) > 5
    late = [dev - own for own, dev in states]
    assert all(-2_000 < d < 100_000 for d in late), sorted(late)        # never before the unit printed it
    name, first = next((n, ln) for n, ln in lines if ln["dev_us"] is not None)
    case = next(tc for tc in ET.parse(junit).iter("testcase") if tc.get("name") == name)
    assert f"device {first['dev_us']} us (host {first['host_us']} us): {first['text']}" in case.findtext("system-out")


def test_a_receive_ring_too_small_for_a_burst_does_not_conform_and_the_message_says_why(images):
    """The deliberate fault only silicon shows: a debug build's 16-byte receive ring (FW_RX_RING=16) overruns
    while its polled console holds the main loop and the next commands of a burst arrive; the POSIX port
    reads whole writes and never can."""
    r = unohil("conform", "--device", f"qemu:{images['rx16']}", "--no-scenarios", "-q", timeout=600)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr
    assert r.stdout.rstrip().endswith("DOES NOT CONFORM"), r.stdout[-2000:]
    assert re.search(r"no reply to \w+ \(seq \d+\) within \d+ ms; the unit's console said last: "
                     r"'receive ring overrun: \d+ bytes lost \(ring of 16 bytes\)", r.stdout), r.stdout[-3000:]


def test_the_unit_without_a_landing_sensor(images):
    """landing_sensor=0 boots the SD-11 form of the unit (a boot parameter); its scenario runs on it."""
    r = unohil("run", "fixtures/scenarios/showdown", "-k", "landing", "--device",
               f"qemu:{images['unit']}?landing_sensor=0", timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]
    assert re.search(r"[1-9]\d* passed, 0 failed", r.stdout), r.stdout[-2000:]


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="the full real-clock acceptance run: set UNOHIL_FIRMWARE_CONFORM=1")
@pytest.mark.parametrize("kind", KINDS)
def test_the_firmware_conforms_under_qemu_and_passes_the_whole_library(images, tmp_path, kind):
    """unohil conform ends CONFORMS on one QEMU unit of the kind while the kind's library runs on a pool of
    three (.ci/run runs the three kinds at once)."""
    conform = subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", "conform", "--device",
                                f"qemu:{images[kind]}", "-q", "--json", str(tmp_path / "conform.json")], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    run = unohil("run", f"fixtures/scenarios/{kind}",
                 *[a for _ in range(3) for a in ("--device", f"qemu:{images[kind]}")], timeout=1500)
    out, _ = conform.communicate(timeout=1500)
    print(out[-1500:])
    print(run.stdout[-1500:])
    assert conform.returncode == 0 and out.rstrip().endswith("CONFORMS"), out[-4000:]
    assert run.returncode == 0, run.stdout[-4000:]
    assert re.search(r"\d+ passed, 0 failed", run.stdout), run.stdout[-2000:]


# ---- the unit's lifecycle: flash, power-cycle ----

def test_firmware_puts_the_image_on_the_unit_before_the_run(images):
    """The URL names the faulty build; --firmware replaces it with the good one before conform starts."""
    r = unohil("conform", "--device", f"qemu:{images['rx16']}", "--firmware", str(images["unit"]), "--no-scenarios",
               "-q", timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "0 failed" in r.stdout and "receive ring overrun" not in r.stdout


def test_firmware_on_a_unit_nothing_can_flash_is_one_clear_error(images, tmp_path):
    r = unohil("run", "--device", "emu://showdown", "--firmware", str(images["unit"]), timeout=120)
    assert r.returncode == 2 and "nothing here can put an image on this unit" in r.stderr, r.stderr
    r = unohil("conform", "--device", f"qemu:{images['unit']}", "--firmware", str(tmp_path / "none.elf"), timeout=120)
    assert r.returncode == 2 and "--firmware: no such file" in r.stderr, r.stderr


def test_a_unit_that_hangs_mid_race_is_power_cycled_and_the_run_goes_on(images):
    """QEMU stopped (SIGSTOP: the CPU and its UART freeze, the link stays open) in the countdown of the
    second race: that race is a link error naming the power cycle; the unit boots again and the third
    race passes."""
    from unohil.harness.outcome import Outcome
    from unohil.harness.run.runner import Runner
    from unohil.harness.scenarios.load import loads
    from unohil.harness.session.driver import Driver
    from test_faults import GOOD
    races = [loads(GOOD.replace("name: clean win", f"name: clean win {i}"), "t.yaml")[0] for i in range(3)]
    with Driver.open(f"qemu:{images['unit']}") as d:
        unit = d.link.qemu
        runner = Runner(d)
        first = runner.run(races[0])
        hang = threading.Timer(0.5, os.kill, (unit.process.pid, signal.SIGSTOP))
        hang.start()
        second = runner.run(races[1])
        hang.join()
        third = runner.run(races[2])
        starts = unit.starts
    assert first.status is Outcome.PASS, first.races[0].error
    assert second.status is Outcome.LINK_ERROR
    assert "the unit stopped answering: power-cycled (QEMU killed and started again)" in second.races[0].error
    assert third.status is Outcome.PASS, third.races[0].error
    assert starts == 2


# ---- the unit's own words: its console beside the protocol ----

def test_the_console_is_in_the_trace_json_junit_html_and_perfetto_in_order_with_the_events(images, tmp_path):
    from test_faults import GOOD
    (tmp_path / "race.yaml").write_text(GOOD)
    r = unohil("run", str(tmp_path / "race.yaml"), "--device", f"qemu:{images['unit']}", "--trace", str(tmp_path),
               "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"), timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    (trace,) = tmp_path.glob("*.jsonl")
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    console = [rec for rec in records if rec["dir"] == "console"]
    assert console
    # each STATE event the unit sent is in its console, at the same device time, and the console's line,
    # placed on device time through the clock sync from its host stamp, is within 20 ms of it
    states = [rec for rec in records if rec.get("type") == "STATE" and rec["dir"] == "rx"]
    said = [c["text"] for c in console if " state " in c["text"]]
    assert said == [f"{st['dev_raw']} state {st['fields']['previous']} -> {st['fields']['state']}" for st in states]
    for st in states:
        text = f"{st['dev_raw']} state {st['fields']['previous']} -> {st['fields']['state']}"
        line = next((c for c in console if c["text"] == text), None)
        assert line is not None, (text, [c["text"] for c in console])
        assert abs(line["dev_us"] - st["dev_us"]) < 20_000, (line, st)
    # every line, the boot banner read before the clock sync too, placed on the unit's clock
    # every line from the unit's clock zero on ("0 boot reason 0"), those read before the clock sync too, is
    # placed on the unit's clock; the banner the firmware prints before it starts its clock may fall before
    # its zero: None, as a line of no boot's clock
    boot = next(k for k, c in enumerate(console) if c["text"] == "0 boot reason 0")
    assert all(c["dev_us"] is not None for c in console[boot:]) and console[boot]["dev_us"] < 20_000
    assert [c["text"] for c in console[:boot]] == ["showdown firmware on mps2-an385"]
    # the JSON: the race's console, relative to the race start like its events, the verdict among it
    race = json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["results"][0]
    texts = [c["text"] for c in race["console"]]
    assert any(" verdict reason " in t for t in texts), texts
    go = next(c for c in race["console"] if c["text"].endswith("state 2 -> 3"))
    verdict = next(c for c in race["console"] if " verdict reason " in c["text"])
    assert 0 < go["dev_us"] < verdict["dev_us"]
    # JUnit's system-out, the HTML timeline's console lane, the Perfetto export's console thread
    assert "console, race 0, +" in (tmp_path / "r.xml").read_text()
    r = unohil("report", str(tmp_path / "r.json"), "-o", str(tmp_path / "r.html"), timeout=120)
    assert r.returncode == 0, r.stderr
    assert 'class="lane">console</text>' in (tmp_path / "r.html").read_text()
    r = unohil("export", "--perfetto", str(tmp_path / "p.json"), str(trace), timeout=120)
    assert r.returncode == 0, r.stderr
    perfetto = json.loads((tmp_path / "p.json").read_text())
    events = perfetto["traceEvents"] if isinstance(perfetto, dict) else perfetto
    assert any(ev.get("name", "").endswith("state 2 -> 3") for ev in events)


def test_the_timing_tool_measures_a_real_time_unit_within_the_specs_budgets(images):
    """tools/qemu_timing.py (docs/firmware.md's table): on the host's clock the unit's time runs within 1 %
    of the host's and its replies come within SPEC 4.3's 50 ms."""
    from tools.qemu_timing import measure
    m = measure(f"qemu:{images['unit']}?icount=off", seconds=2.0, presses=5)
    assert "error" not in m, m
    assert abs(m["rate_ppm"]) < 10_000, m["rate_ppm"]
    assert max(m["rtt"]) < 50_000 and len(m["lateness"]) == 5
    assert all(t >= 0 for t in m["turnaround"])
