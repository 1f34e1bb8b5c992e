"""JUnit files: valid against the common schema (junit-10.xsd), device identity as suite properties,
the trace excerpt and trace file in system-out, names with control characters still parse."""
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from unohil.harness.cli import main
from unohil.harness.outcome import Outcome, Record
from unohil.harness.report.junit import junit_xml, xml_text
from unohil.protocol import catalogue as cat

lxml_etree = pytest.importorskip("lxml.etree", reason="lxml (the test extra) checks the JUnit schema")

XSD = Path(__file__).resolve().parent / "data" / "junit-10.xsd"

# a first press 180 ms after green: b loses
PASSING = """
name: clean win
unit: showdown
config: {countdown_min_us: 2000000, countdown_max_us: 2000000}
steps: [{load: 2}, {press: timer, at: start + 1000}, {press: paddle_a, at: green + 180000}]
expect: {verdict: {loser: b, reason: first_press}}
"""
FAILING = PASSING.replace("clean win", "wrong loser").replace("loser: b", "loser: a")


def schema_errors(path) -> list[str]:
    schema = lxml_etree.XMLSchema(lxml_etree.parse(str(XSD)))
    ok = schema.validate(lxml_etree.parse(str(path)))
    return [] if ok else [str(e) for e in schema.error_log]


def test_the_schema_refuses_what_the_old_writer_wrote(tmp_path):
    """The schema check can fail: a file/line attribute and testcase properties are not junit-10."""
    bad = tmp_path / "bad.xml"
    bad.write_text('<testsuites><testsuite name="s" tests="1" failures="1" errors="0">'
                   '<testcase name="x" file="a.yaml"><failure message="m"/><properties/></testcase>'
                   '</testsuite></testsuites>')
    errors = schema_errors(bad)
    assert any("file" in e for e in errors) and any("properties" in e for e in errors)


def test_run_junit_is_schema_valid_with_identity_trace_and_excerpt(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "good.yaml").write_text(PASSING)
    (tmp_path / "scenarios" / "bad.yaml").write_text(FAILING)
    rc = main(["run", "scenarios", "-q", "--junit", "r.xml", "--trace", "traces"])
    assert rc == 1
    assert schema_errors(tmp_path / "r.xml") == []
    root = ET.parse(tmp_path / "r.xml").getroot()
    (suite,) = root
    assert suite.get("name") == "emu://showdown?clock=virtual"
    assert [child.tag for child in suite][0] == "properties"
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["device.kind"] == "showdown" and props["device.url"] == "emu://showdown?clock=virtual"
    assert props["device.catalog_crc"] == f"{cat.CATALOG_CRC:#06x}"
    assert props["device.firmware"].count(".") == 2 and int(props["device.serial"]) >= 0
    assert int(props["device.boot_id"]) > 0
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    bad, good = cases["wrong loser"], cases["clean win"]
    assert bad.get("classname") == "scenarios.bad" and good.get("classname") == "scenarios.good"
    assert [c.tag for c in bad] == ["failure", "system-out"]
    assert "verdict[0].loser: expected a, got b" in bad.find("failure").get("message")
    out = bad.find("system-out").text
    trace_file = Path("traces") / "emu_showdown_clock_virtual.jsonl"       # as the user named the directory
    assert f"trace file: {trace_file}" in out and trace_file.exists()
    assert "trace (device us from race start):" in out and "SD_VERDICT" in out
    assert out.startswith("scenarios/bad.yaml:2\n")
    assert good.find("failure") is None and "SD_VERDICT" not in good.find("system-out").text


def test_control_characters_in_names_and_messages_still_parse(tmp_path):
    nasty = "race \x1b[31mred\x1b[0m \x00\x07 tab\tok \ufffe"
    rec = Record(suite=nasty, name=nasty, outcome=Outcome.FAIL, message=nasty, detail=nasty + "\nline 2",
                 classname="./" + nasty, output=nasty, device="emu://x")
    path = tmp_path / "c.xml"
    path.write_text(junit_xml(nasty, [rec], [{"url": "emu://x", "kind": nasty}]), encoding="utf-8")
    assert schema_errors(path) == []
    case = ET.parse(path).getroot().find("testsuite/testcase")
    assert case.get("name") == r"race \x1b[31mred\x1b[0m \x00\x07 tab" + "\tok " + r"\ufffe"
    assert not case.get("classname").startswith(".")
    assert xml_text("plain text, µs") == "plain text, µs"


def test_conform_junit_is_schema_valid_with_identity(tmp_path):
    junit = tmp_path / "c.xml"
    assert main(["conform", "--device", "emu://flash", "--quick", "--junit", str(junit), "-q"]) in (0, 1)
    assert schema_errors(junit) == []
    suites = list(ET.parse(junit).getroot())
    assert suites and all(s[0].tag == "properties" for s in suites)
    props = {p.get("name"): p.get("value") for p in suites[0].find("properties")}
    assert props["device.kind"] == "flash" and props["device.url"] == "emu://flash"
    assert not any(c.get("classname").startswith(".") for c in ET.parse(junit).getroot().iter("testcase"))
