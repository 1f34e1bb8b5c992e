"""JUnit XML from outcome records: one testsuite per record suite, one testcase per record.

The output is valid against the common JUnit schema (the Jenkins xUnit plugin's junit-10.xsd, which
GitLab, Jenkins and most CI servers read): properties only on a testsuite, and before its testcases;
no file/line attributes on a testcase (its system-out says where the item is written); no `skipped`
on the root. The identity of the unit a suite ran on is that suite's properties; each testcase's
system-out holds where it is written, its figures, the trace excerpt of what did not pass and the
trace file's path. Every string goes through xml_text, so a control character in a scenario's name
cannot make a file that does not parse."""
from __future__ import annotations

import re
from xml.etree import ElementTree as ET

from unohil.harness.outcome import Outcome, Record

# What XML 1.0 cannot hold at all, not even as a character reference: shown as a Python-style escape
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")

#: A unit's identity, as JUnit suite properties: property name -> key of a device description
#: (harness/run/parallel.py Rack.describe, the results file's `devices`)
IDENTITY = (("device.url", "url"), ("device.kind", "kind"), ("device.firmware", "firmware"),
            ("device.serial", "serial"), ("device.boot_id", "boot_id"), ("device.catalog_crc", "catalog_crc"))


def xml_text(s: object) -> str:
    """s as text XML 1.0 can carry: control characters become visible escapes (\\x1b)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", str(s))


def device_from_identity(url: str, identity: dict) -> dict:
    """A device description (the keys IDENTITY reads) from the fields of an IDENTITY reply."""
    return {"url": url, "kind": identity.get("kind_name"), "serial": identity.get("serial"),
            "firmware": f"{identity['fw_major']}.{identity['fw_minor']}.{identity['fw_patch']}"
            if "fw_major" in identity else None,
            "boot_id": identity.get("boot_id"), "catalog_crc": identity.get("catalog_crc")}


def _counts(el: ET.Element, records: list[Record], root: bool = False) -> None:
    el.set("tests", str(len(records)))
    el.set("failures", str(sum(1 for r in records if r.outcome is Outcome.FAIL)))
    el.set("errors", str(sum(1 for r in records if r.outcome.junit == "error")))
    if not root:                # junit-10.xsd: `skipped` is a testsuite attribute only
        el.set("skipped", str(sum(1 for r in records if r.outcome is Outcome.SKIP)))
    el.set("time", f"{sum(r.seconds for r in records):.6f}")


def _classname(r: Record, suite: str) -> str:
    return (r.classname or suite).lstrip("./") or suite


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs) -> ET.Element:
    el = ET.SubElement(parent, tag, {k: xml_text(v) for k, v in attrs.items()})
    if text:
        el.text = xml_text(text)
    return el


def _system_out(r: Record, device: dict | None) -> str:
    lines = []
    if r.file is not None:
        lines.append(f"{r.file}:{r.line}" if r.line is not None else r.file)
    if r.properties:
        lines.append(" ".join(f"{k}={v}" for k, v in r.properties.items()))
    if r.output:
        lines.append(r.output)
    if device and device.get("trace"):
        lines.append(f"trace file: {device['trace']}")
    return "\n".join(lines)


def junit_xml(name: str, records: list[Record], devices: list[dict] = ()) -> str:
    """devices: descriptions of the units (url, kind, firmware, serial, boot_id, catalog_crc, trace);
    a suite whose records all ran on one of them gets its identity as properties."""
    by_url = {d["url"]: d for d in devices}
    root = ET.Element("testsuites", name=xml_text(name))
    _counts(root, records, root=True)
    suites: dict[str, list[Record]] = {}
    for r in records:
        suites.setdefault(r.suite, []).append(r)
    for title, members in suites.items():
        suite = _sub(root, "testsuite", name=title)
        _counts(suite, members)
        urls = {r.device for r in members}
        device = by_url.get(urls.pop()) if len(urls) == 1 else None
        if device is not None:
            props = _sub(suite, "properties")
            for prop, key in IDENTITY:
                if device.get(key) is not None:
                    _sub(props, "property", name=prop, value=device[key])
        for r in members:
            case = _sub(suite, "testcase", classname=_classname(r, title), name=r.name, time=f"{r.seconds:.6f}")
            tag = r.outcome.junit
            if tag is not None:
                _sub(case, tag, None if tag == "skipped" else (r.detail or r.message),
                     message=r.message or str(r.outcome))
            out = _system_out(r, by_url.get(r.device))
            if out:
                _sub(case, "system-out", out)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def run_junit(run, name: str = "unohil") -> str:
    """The JUnit XML of a run (report/run_record.py RunRecord): a testcase per scenario, a testsuite per unit."""
    return junit_xml(name, [r.record() for r in run.scenarios], run.devices)
