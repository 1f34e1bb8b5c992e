"""JUnit XML from outcome records: one testsuite per record suite, one testcase per record."""
from __future__ import annotations

from xml.etree import ElementTree as ET

from harness.outcome import Outcome, Record


def _counts(el: ET.Element, records: list[Record]) -> None:
    el.set("tests", str(len(records)))
    el.set("failures", str(sum(1 for r in records if r.outcome is Outcome.FAIL)))
    el.set("errors", str(sum(1 for r in records if r.outcome.junit == "error")))
    el.set("skipped", str(sum(1 for r in records if r.outcome is Outcome.SKIP)))
    el.set("time", f"{sum(r.seconds for r in records):.6f}")


def junit_xml(name: str, records: list[Record]) -> str:
    root = ET.Element("testsuites", name=name)
    _counts(root, records)
    suites: dict[str, list[Record]] = {}
    for r in records:
        suites.setdefault(r.suite, []).append(r)
    for title, members in suites.items():
        suite = ET.SubElement(root, "testsuite", name=title)
        _counts(suite, members)
        for r in members:
            attrs = {"classname": r.classname or title, "name": r.name, "time": f"{r.seconds:.6f}"}
            if r.file is not None:
                attrs["file"] = r.file
            if r.line is not None:
                attrs["line"] = str(r.line)
            case = ET.SubElement(suite, "testcase", **attrs)
            tag = r.outcome.junit
            if tag is not None:
                el = ET.SubElement(case, tag, message=r.message or str(r.outcome))
                if tag != "skipped":
                    el.text = r.detail or r.message
            if r.properties:
                props = ET.SubElement(case, "properties")
                for k, v in r.properties.items():
                    ET.SubElement(props, "property", name=k, value=str(v))
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
