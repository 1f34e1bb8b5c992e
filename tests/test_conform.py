"""unohil conform: passes on the emulator, and catches devices that break the protocol."""
import json
import os
import threading
import xml.etree.ElementTree as ET

import pytest

from unohil.emulator.device import ERROR, Device
from unohil.emulator.inprocess import VirtualLink
from unohil.emulator.usb_backend import EmulatedBackend
from unohil.harness import cli, conform
from unohil.harness.links import usb as usb_link
from unohil.harness.scenarios.library import library_paths
from unohil.harness.scenarios.load import load_paths
from unohil.protocol import StreamDecoder, encode, msg

# Findings a real-clock run is allowed to report: none.
REAL_CLOCK_FINDINGS: frozenset = frozenset()


def _failures(report, allowed=frozenset()):
    return [(c.section, c.name, c.detail) for c in report.checks
            if c.status in ("fail", "error") and c.name not in allowed]


def _virtual(device_cls=Device, kind="showdown", **options):
    """A virtual-clock link whose unit is device_cls (a deliberately broken Device, say), made with the
    Device options given (without=..., say)."""
    link = VirtualLink(kind)
    link.device = device_cls(kind, link.clock, seed=1, serial=1, **options)
    link.device.start()
    return link


def _check(report, fragment):
    hits = [c for c in report.checks if fragment in c.name]
    assert hits, f"no check named like {fragment!r}"
    return hits[0]


def test_the_emulator_conforms_with_its_whole_library(tmp_path, capsys):
    out, junit = tmp_path / "c.json", tmp_path / "c.xml"
    rc = cli.main(["conform", "--device", "emu://showdown", "--json", str(out), "--junit", str(junit), "-q"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "CONFORMS" in text and "7 Showdown unit" in text
    doc = json.loads(out.read_text())
    assert doc["passed"] and doc["identity"]["kind_name"] == "showdown"
    sections = {s["section"] for s in doc["sections"]}
    assert {"2 Framing", "3 Header and device time", "4.2 Handshake and versions", "4.3 Commands and replies",
            "4.5 Events and EVENT_RESEND", "4.6 Time sync", "4.7 Configuration", "4.8 Test mode",
            "4.9 RESET and BOOT", "7 Showdown unit"} <= sections
    scen = [c for c in doc["checks"] if c["section"] == "7 Showdown unit"]
    assert len(scen) >= 30 and all(c["status"] == "pass" or not c["unchecked"] for c in scen)
    assert doc["verdict"] == "CONFORMS" and doc["unchecked"] == 0
    assert not doc["coverage"]["unchecked"] and not doc["coverage"]["not_covered"]
    assert {d["status"] for d in doc["coverage"]["decisions"]} == {"passed", "n/a"}     # n/a: SD-11
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("failures") == "0"
    assert {s.get("name") for s in root} == sections
    assert doc["stats"]["commands"] > 200


@pytest.mark.parametrize("kind", ["flash", "launcher"])
def test_the_other_unit_kinds_pass_the_protocol_checks(kind):
    report = conform.run(VirtualLink(kind), scenarios=None)
    assert report.passed, _failures(report)
    assert _check(report, "CONFIG_SET outside the idle states").status == "pass"
    assert _check(report, "INPUT refused by the unit: NAK wrong_state").status == "pass"


def test_over_a_pty_to_a_separate_emulator_process(emulator_process, tmp_path, capsys):
    _proc, (path,) = emulator_process("showdown", "--pty", "--clock", "virtual")
    out = tmp_path / "c.json"
    rc = cli.main(["conform", "--device", path, "-k", "loading and countdown", "--json", str(out), "-q"])
    doc = json.loads(out.read_text())
    bad = [(c["section"], c["name"], c["detail"]) for c in doc["checks"]
           if c["status"] in ("fail", "error") and c["name"] not in REAL_CLOCK_FINDINGS]
    assert not bad and not doc["aborted"], capsys.readouterr().out
    assert rc in (0, 1)
    assert [c["status"] for c in doc["checks"] if c["section"] == "7 Showdown unit"] == ["pass"]


def test_over_usb_with_the_usb_section(tmp_path):
    with EmulatedBackend() as bus:
        bus.add("showdown", serial=0x2A)
        previous = usb_link.set_backend(bus)
        try:
            link = usb_link.open_usb("usb://1209:0001")
            report = conform.run(link, scenarios=None)
            link.close()
        finally:
            usb_link.set_backend(previous)
    assert not _failures(report, REAL_CLOCK_FINDINGS) and not report.aborted
    assert _check(report, "USB iSerialNumber").status == "pass"


# ---- devices that break the protocol, and the checks that must catch them ----

class WrongLengthNak(Device):
    """Answers a payload of the wrong length with bad_value instead of bad_length."""

    def _frame_error(self, err):
        if err.kind == "bad_length":
            self._nak_raw(err.seq, err.type_id, ERROR.bad_value)
            return
        super()._frame_error(err)


class TwiceStatus(Device):
    """Sends the STATUS reply twice."""

    def _command(self, frame, t):
        super()._command(frame, t)
        if frame.msg.NAME == "STATUS_GET":
            super()._command(frame, t)


class NoTooLate(Device):
    """Accepts INJECTs in the past (and runs them at once)."""

    def _command(self, frame, t):
        from unohil.protocol.devtime import diff, wrap
        m = frame.msg
        if m.NAME == "INJECT" and self._valid_input(m.input, m.action) and diff(m.at_us, wrap(t)) <= 0:
            frame.msg = m._replace(at_us=wrap(t + 1))
        super()._command(frame, t)


class ResendNewTimes(Device):
    """Resends events with the time of the resend instead of their original time."""

    def _command(self, frame, t):
        m = frame.msg
        if m.NAME != "EVENT_RESEND":
            return super()._command(frame, t)
        wanted = [e for e in self._ring if (e[0] - m.first_seq) & 0xFFFF < m.count]
        self._send(msg.ACK(frame.seq, m.ID, len(wanted)), t & 0xFFFFFFFF)
        for _seq, _time_us, event in wanted:
            self._send(event, t & 0xFFFFFFFF)


class StampsWhenRun(Device):
    """Runs (and stamps) most injected stimuli a little after their time, as a unit that acts on
    them whenever its loop gets round to it would; the first two it runs on time."""

    runs = 0

    def _run_inject(self, t, sid, inp, action, value):
        self.runs += 1
        super()._run_inject(t + (self.runs % 3 if self.runs > 2 else 0), sid, inp, action, value)


class DropsAnEvent(Device):
    """Loses one event on the wire after every 40th (its ring still has it)."""

    def _emit(self, cls, fields, t):
        if self._event_seq % 40 == 39:
            self.drop_next_events(1)
        super()._emit(cls, fields, t)


class RebootsOnALongReset(Device):
    """Answers a RESET of the wrong length NAK bad_length, as it should, and then reboots anyway."""

    def _frame_error(self, err):
        super()._frame_error(err)
        if err.kind == "bad_length" and err.type_id == msg.RESET.ID:
            self._boot(1)


class PressesOnABadInput(Device):
    """Refuses an INPUT of the wrong length, then acts on it: the unit sees a press."""

    def _frame_error(self, err):
        super()._frame_error(err)
        if err.kind == "bad_length" and err.type_id == msg.INPUT.ID:
            self._command(_Frame(msg.INPUT(input=0, action=1, value=1)), self.clock.now())


class SeedsOnABadConfigSet(Device):
    """Refuses a CONFIG_SET of the wrong length, then sets rng_seed from it all the same."""

    def _frame_error(self, err):
        super()._frame_error(err)
        if err.kind == "bad_length" and err.type_id == msg.CONFIG_SET.ID:
            self.config["rng_seed"] = 0xDEADBEEF


class _Frame:
    """A decoded command as the device's dispatcher takes it (its reply seq chosen out of the way)."""

    def __init__(self, m, seq=0xFFF0):
        self.msg, self.seq = m, seq


@pytest.mark.parametrize("device_cls, words", [
    (RebootsOnALongReset, "the unit sent BOOT"),
    (PressesOnABadInput, "the unit sent INPUT_SEEN"),
    (SeedsOnABadConfigSet, "changed rng_seed"),
])
def test_a_device_that_acts_on_a_frame_it_refused_is_caught(device_cls, words):
    report = conform.run(_virtual(device_cls), scenarios=None)
    c = _check(report, "one byte too long and one byte short")
    assert c.status == "fail" and words in c.detail, c


@pytest.mark.parametrize("device_cls, section, check, words", [
    (WrongLengthNak, "2", "one byte too long and one byte short", "expected NAK bad_length, got NAK bad_value"),
    (TwiceStatus, "4.3", "exactly one reply", "answered more than once"),
    (NoTooLate, "4.8", "INJECT in the past", "expected NAK too_late, got ACK"),
    (ResendNewTimes, "4.5", "same payload, same header time", "originally"),
    (DropsAnEvent, "4.5", "event_seq counts every new event without a gap", "gap"),
    (StampsWhenRun, "4.8", "INPUT_SEEN injected at exactly at_us", "stamped off their scheduled time"),
])
def test_a_broken_device_is_caught(device_cls, section, check, words):
    report = conform.run(_virtual(device_cls), scenarios=None)
    assert not report.passed
    c = _check(report, check)
    assert (c.section, c.status) == (section, "fail") and words in c.detail, c


class SilentConfigGet:
    """A link on which replies to CONFIG_GET never arrive."""

    def __init__(self, inner):
        self.inner = inner
        self.url = "emu://showdown (CONFIG_GET replies lost)"
        self.virtual = True
        self._dec = StreamDecoder()
        self._config_get_seqs = set()

    def write(self, data):
        for f in StreamDecoder().feed(bytes(data)):
            if not isinstance(f, Exception) and f.msg.NAME == "CONFIG_GET":
                self._config_get_seqs.add(f.seq)
        self.inner.write(data)

    def read(self, timeout_us):
        data, host_us = self.inner.read(timeout_us)
        frames = [f for f in self._dec.feed(data) if not isinstance(f, Exception)]
        kept = [f for f in frames if not (f.msg.KIND == "reply" and f.msg.cmd_seq in self._config_get_seqs)]
        return b"".join(encode(f.msg, f.seq, f.time_us) for f in kept), host_us

    def now_us(self):
        return self.inner.now_us()

    def close(self):
        self.inner.close()


def test_a_command_that_is_never_answered_fails_the_run():
    report = conform.run(SilentConfigGet(VirtualLink("showdown")), scenarios=None)
    assert not report.passed
    one = _check(report, "exactly one reply")
    assert one.status == "fail" and "never answered: CONFIG_GET" in one.detail
    assert _check(report, "CONFIG_GET of every parameter").status == "fail"


def test_a_scenario_failure_fails_its_section(tmp_path, capsys):
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("""
- name: the verdict is claimed for the wrong side
  unit: showdown
  seed: 5
  config: {countdown_min_us: 2000000, countdown_max_us: 2000000}
  steps:
    - load: 1
    - press: timer
      at: start + 1000
    - press: paddle_a
      at: green + 200000
  expect:
    verdict: {loser: a}
""")
    junit = tmp_path / "c.xml"
    rc = cli.main(["conform", "--device", "emu://showdown", "--scenarios", str(wrong), "--junit", str(junit), "-q"])
    out = capsys.readouterr().out
    assert rc == 1 and "DOES NOT CONFORM" in out and "verdict[0].loser" in out
    suite = next(s for s in ET.parse(junit).getroot() if s.get("name") == "7 Showdown unit")
    assert suite.get("failures") == "1"


def test_usage_and_connection_errors_are_exit_2(tmp_path, capsys):
    assert cli.main(["conform", "--device", "nope://x"]) == 2
    assert cli.main(["conform", "--device", "emu://showdown", "--json", str(tmp_path / "no" / "x.json")]) == 2
    master, slave = os.openpty()
    try:
        rc = cli.main(["conform", "--device", os.ttyname(slave), "-q"])
    finally:
        os.close(master)
        os.close(slave)
    assert rc == 2 and "no answer to HELLO" in capsys.readouterr().err


def test_unplugged_during_the_run_is_exit_2_with_a_partial_report(tmp_path, capsys):
    out = tmp_path / "c.json"
    with EmulatedBackend() as bus:
        unit = bus.add("showdown")
        previous = usb_link.set_backend(bus)
        try:
            threading.Timer(0.3, unit.unplug).start()
            rc = cli.main(["conform", "--device", "usb://1209:0001", "--no-scenarios", "--json", str(out), "-q"])
        finally:
            usb_link.set_backend(previous)
    assert rc == 2 and "unplugged" in capsys.readouterr().err
    doc = json.loads(out.read_text())
    assert "unplugged" in doc["aborted"] and not doc["passed"] and doc["checks"]


def test_conform_without_a_scenario_library_is_an_error_not_a_pass(monkeypatch, capsys):
    from unohil.harness.scenarios import library
    monkeypatch.setattr(library, "library_dir", lambda: None)
    assert cli.main(["conform", "--device", "emu://flash", "-q"]) == 2
    err = capsys.readouterr().err
    assert "the scenario library is not installed" in err and "CONFORMS" not in err
    assert cli.main(["run", "-q"]) == 2
    assert cli.main(["conform", "--device", "emu://flash", "-q", "--no-scenarios"]) == 0


@pytest.mark.parametrize("url, verdict, unchecked", [
    ("emu://showdown?without=time_sync", "PARTIAL", {"4.6 Time sync"}),
    ("emu://showdown?without=config_set", "PARTIAL", {"4.7 Configuration", "7 Showdown unit"}),
    ("emu://flash?without=event_resend", "PARTIAL", {"4.5 Events and EVENT_RESEND"}),
    ("emu://launcher?without=host_input", "PARTIAL", None),
    ("emu://showdown?without=test_mode", "PARTIAL", None),
    # SD-11 allows a unit without the sensor, and the library covers both forms of a tie
    ("emu://showdown?landing_sensor=0", "CONFORMS", set()),
    # SPEC 6 allows a generator of the unit's own: seeded scenarios go unchecked, nothing fails
    ("emu://showdown?rng=python", "PARTIAL", {"7 Showdown unit"}),
    ("emu://flash?rng=python", "PARTIAL", {"8 Flash base"}),
    ("emu://launcher?rng=python", "PARTIAL", {"9 Card launcher"}),
    ("emu://showdown?rng=python&landing_sensor=0", "PARTIAL", {"7 Showdown unit"}),
])
def test_a_unit_without_an_optional_capability_fails_nothing(tmp_path, url, verdict, unchecked):
    out = tmp_path / "c.json"
    rc = cli.main(["conform", "--device", url, "-q", "--json", str(out)])
    doc = json.loads(out.read_text())
    failed = [(c["section"], c["name"], c["detail"]) for c in doc["checks"] if c["status"] not in ("pass", "skip")]
    assert not failed and rc == 0
    assert doc["verdict"] == verdict
    sections = {c["section"] for c in doc["checks"] if c["unchecked"]}
    if unchecked is not None:
        assert sections == unchecked
    assert all(c["detail"] for c in doc["checks"] if c["unchecked"])      # every skip says why


def test_unsupported_is_checked_for_each_command_a_unit_lacks():
    from unohil.harness.conform import Conformance
    from unohil.harness.links import open_link
    link = open_link("emu://showdown?without=time_sync,config_set")
    try:
        report = Conformance(link).run()
    finally:
        link.close()
    (c,) = [c for c in report.checks if c.name.startswith("commands without their capability")]
    assert c.status == "pass" and "time_sync" in c.detail and "config_set" in c.detail


class SwappedCrc(Device):
    """Sends every frame with its CRC's two bytes swapped (big-endian)."""

    def _send(self, m, time_us):
        from unohil.protocol.framing import cobs_decode, cobs_encode
        raw = bytearray(cobs_decode(encode(m, self._tx_seq, time_us)[:-1]))
        raw[-2], raw[-1] = raw[-1], raw[-2]
        self._tx_seq = (self._tx_seq + 1) & 0xFFFF
        self.output += cobs_encode(bytes(raw)) + b"\0"


class NoEcho(Device):
    """Answers every command, but names the wrong cmd_seq in its replies."""

    def _send(self, m, time_us):
        if m.KIND == "reply" and m.cmd_seq != 0xFFFF:
            m = m._replace(cmd_seq=(m.cmd_seq + 1) & 0xFFFF)
        super()._send(m, time_us)


@pytest.mark.parametrize("device_cls, words", [
    (SwappedCrc, "CRC is sent big-endian"),
    (NoEcho, "does not echo cmd_seq"),
])
def test_a_unit_that_does_not_answer_hello_is_told_why(device_cls, words):
    from unohil.harness.errors import ConformError
    with pytest.raises(ConformError) as exc:
        conform.run(_virtual(device_cls), scenarios=None)
    assert words in str(exc.value)


@pytest.mark.parametrize("device_cls, words", [
    (SwappedCrc, "their CRCs are right with the two bytes swapped"),
    (NoEcho, "IDENTITY replies did arrive, naming cmd_seq"),
])
def test_the_driver_names_the_cause_when_replies_arrive_but_do_not_count(device_cls, words):
    from unohil.harness import Driver, HarnessError
    with pytest.raises(HarnessError) as exc:
        Driver(_virtual(device_cls)).hello()
    assert words in str(exc.value)


@pytest.mark.parametrize("rng, ran", [("reference", True), ("python", False)])
def test_conform_says_how_many_scenarios_depend_on_the_reference_generator(tmp_path, capsys, rng, ran):
    out = tmp_path / "c.json"
    cli.main(["conform", "--device", f"emu://launcher?rng={rng}", "-q", "--json", str(out)])
    stats = json.loads(out.read_text())["stats"]["reference_rng"]
    library = load_paths(library_paths("launcher"))
    seeded = sum("reference_rng" in sc.needs for sc in library)
    assert (stats["depend"], stats["scenarios"], stats["unit_has_it"]) == (seeded, len(library), ran) and seeded
    said = capsys.readouterr().out
    assert f"{seeded} of {len(library)} scenarios depend on the reference generator" in said
    assert ("so they ran" if ran else "so they were skipped") in said


# ---- coverage: what a run proved, by SPEC section and decision id ----

from unohil.harness.conform import coverage, draws, quick                  # noqa: E402
from unohil.harness.conform.registry import CHECKS                    # noqa: E402
from unohil.harness.conform.report import CheckResult, Report         # noqa: E402
from unohil.harness.scenarios.load import loads                         # noqa: E402
from unohil.protocol import catalogue as cat                           # noqa: E402


def test_every_decision_of_the_catalogue_is_covered_by_a_check_or_a_library_scenario():
    import yaml
    scenarios = load_paths(library_paths())
    named = {d for c in CHECKS for d in c.decisions} | {d for s in scenarios for d in s.covers}
    assert not set(cat.DECISIONS) - named, f"decisions nothing covers: {sorted(set(cat.DECISIONS) - named)}"
    # every library scenario says what it covers, [] included, so that a new one cannot forget to
    for path in sorted(set(s.file for s in scenarios)):
        docs = yaml.safe_load(open(path, encoding="utf-8"))
        assert all("covers" in d for d in docs), f"{path}: a scenario without covers:"


def _report(kind, *items):
    r = Report("synthetic", identity={"kind_name": kind})
    r.checks = [CheckResult(section, name, status, detail, decisions=decs, gap=gap, scenario=section == "7")
                for section, name, status, detail, decs, gap in items]
    return r


def _status(report, key):
    (c,) = [c for c in coverage.sections(report, report.kind) + coverage.decisions(report, report.kind)
            if c.key == key]
    return c.status, c.reason


def test_coverage_states_passed_failed_unchecked_na_and_not_covered_and_the_verdict_follows():
    ok, skip = conform.report.Outcome.PASS, conform.report.Outcome.SKIP
    items = [("4.3", "a check", ok, "", ("SD-9",), True),
             ("7", "exact", skip, "needs test mode", ("SD-2", "SD-5"), True),
             ("7", "loose", ok, "", ("SD-5",), True),
             ("7", "other variant", skip, "needs a unit with no landing_sensor", ("SD-11",), False)]
    r = _report("showdown", *items)
    assert _status(r, "SD-9") == ("passed", "")
    assert _status(r, "SD-5") == ("passed", "")                   # a skip beside a pass: checked
    assert _status(r, "SD-2") == ("unchecked", "1 skipped: needs test mode")
    assert _status(r, "SD-11") == ("n/a", "1 skipped: needs a unit with no landing_sensor")
    assert _status(r, "SD-7") == ("NOT COVERED", "no check or scenario of this run names it")
    assert _status(r, "8")[0] == "n/a" and _status(r, "2") == ("NOT COVERED", "")
    assert r.verdict == "PARTIAL" and {"SD-2", "SD-7", "2"} <= {g.key for g in r.gaps}
    assert "SD-11" not in {g.key for g in r.gaps} and "FL-1" not in {g.key for g in r.gaps}
    r.checks.append(CheckResult("7", "a failure", conform.report.Outcome.FAIL, "SD_VERDICT differs", decisions=("SD-7",),
                                scenario=True))
    assert _status(r, "SD-7") == ("failed", "1 failed: a failure") and r.verdict == "DOES NOT CONFORM"


def test_a_full_run_covers_every_decision_and_json_and_console_say_so(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert cli.main(["conform", "--device", "emu://showdown?without=test_mode", "--json", str(out), "-q"]) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    cov = doc["coverage"]
    assert [d["id"] for d in cov["decisions"]] == [d.id for d in cat.UNITS["showdown"].decisions]
    assert [s["id"] for s in cov["sections"]] == list(conform.registry.SECTIONS)
    assert {"4.8", "SD-2"} <= set(cov["unchecked"]) and cov["not_covered"] == []
    # what went unchecked is what only exact-timing scenarios cover
    assert all("needs test mode" in d["reason"] for d in cov["decisions"] if d["id"] in cov["unchecked"])
    sd2 = next(d for d in cov["decisions"] if d["id"] == "SD-2")
    assert "needs test mode" in sd2["reason"] and len(sd2["scenarios"]) == 3 and not sd2["checks"]
    sd9 = next(d for d in cov["decisions"] if d["id"] == "SD-9")
    assert sd9["status"] == "passed" and sd9["checks"] and sd9["scenarios"]
    assert doc["verdict"] == "PARTIAL"
    assert "coverage by SPEC section and decision" in text and "unchecked SD-2 a press at exactly green" in text


def test_protocol_checks_alone_are_partial_naming_every_decision_left_uncovered():
    report = conform.run(VirtualLink("launcher"), scenarios=None)
    assert report.passed and report.verdict == "PARTIAL"
    # the decisions its protocol checks name are covered; the rest are the scenarios'
    named = {d for c in CHECKS for d in c.decisions}
    assert [g.key for g in report.gaps] == ["9"] + [d.id for d in cat.UNITS["launcher"].decisions if d.id not in named]
    assert all(g.status == "NOT COVERED" for g in report.gaps)


@pytest.mark.parametrize("kind", ["showdown", "flash", "launcher"])
def test_quick_runs_one_scenario_per_decision_and_never_conforms(kind, tmp_path):
    out = tmp_path / "q.json"
    assert cli.main(["conform", "--device", f"emu://{kind}", "--quick", "--json", str(out), "-q"]) == 0
    doc = json.loads(out.read_text())
    library = load_paths(library_paths(kind))
    ran = [c for c in doc["checks"]
           if c["section"].startswith(cat.UNITS[kind].section + " ") and not c["name"].startswith("quick")
           and c["name"] != draws.CHECK and c["name"] not in {k.name for k in CHECKS}]   # the scenarios that ran
    assert doc["verdict"] == "PARTIAL" and doc["quick"] == f"quick run: {len(library) - len(ran)} scenarios not run"
    assert len(ran) <= len(cat.UNITS[kind].decisions) < len(library)
    assert {d["status"] for d in doc["coverage"]["decisions"]} <= {"passed", "n/a"}
    (left,) = [c for c in doc["checks"] if c["name"] == doc["quick"]]
    assert left["status"] == "skip" and left["unchecked"]


def test_quick_picks_the_shortest_runnable_scenario_for_each_decision():
    body = "unit: showdown\nsteps: [{load: 1}]\nexpect: {count: {SD_CARDS: 1}}\n"
    scs = loads("".join(f"- name: {n}\n  covers: [{c}]\n" + "".join("  " + line + "\n" for line in body.splitlines())
                        for n, c in [("long", "SD-1, SD-2"), ("short", "SD-1"), ("shorter but exact", "SD-2"),
                                     ("only one", "SD-3"), ("unrunnable", "SD-4")]))
    lengths = [9, 3, 1, 5, 2]
    runnable = lambda sc: sc.name not in ("shorter but exact", "unrunnable")  # noqa: E731
    got = [sc.name for sc in quick.choose(scs, "showdown", runnable, lengths)]
    # SD-2 first (one runnable candidate): long, which covers SD-1 too, so short is not needed;
    # SD-3: its only one; SD-4: one the unit cannot run, to be reported as skipped
    assert got == ["long", "only one", "unrunnable"]
    assert [sc.name for sc in quick.choose(scs, "showdown", lambda sc: True, lengths)] == [
        "short", "shorter but exact", "only one", "unrunnable"]


class OneFramePerRead:
    """A link that hands over one frame per read, as a serial port read in small pieces does: a
    check must not lean on a reply and the events after it arriving in one read."""

    def __init__(self, inner):
        self.inner, self.url, self.virtual = inner, inner.url, inner.virtual
        self._held, self._host_us = b"", 0

    def read(self, timeout_us):
        if not self._held:
            self._held, self._host_us = self.inner.read(timeout_us)
        cut = self._held.find(b"\x00") + 1 or len(self._held)
        data, self._held = self._held[:cut], self._held[cut:]
        return data, self._host_us

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("kind", ["showdown", "flash", "launcher"])
def test_the_protocol_checks_pass_when_frames_arrive_one_read_at_a_time(kind):
    report = conform.run(OneFramePerRead(VirtualLink(kind)), scenarios=None)
    assert not [(c.name, c.detail) for c in report.checks if not c.status.ok]
