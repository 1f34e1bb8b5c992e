"""unohil ports: list serial ports and USB units, and which of them answer as units."""
from __future__ import annotations

import json
import time

from rich.table import Table
from rich.text import Text

from unohil.harness.cli.exit import Exit
from unohil.harness.errors import UsageError
from unohil.harness.links.ports import DEFAULT_TIMEOUT_MS, scan
from unohil.harness.report.console import output_console, print_table
from unohil.harness.report.files import check_writable, write_results
from unohil.harness.text import printable


def add_parser(sub) -> None:
    p = sub.add_parser("ports", help="list serial ports and USB devices, and which answer as units")
    p.add_argument("--json", metavar="FILE", help="write the list as JSON")
    p.add_argument("--timeout-ms", type=int, default=DEFAULT_TIMEOUT_MS, metavar="N",
                   help=f"how long each port gets to answer HELLO (default {DEFAULT_TIMEOUT_MS})")
    p.add_argument("--also", action="append", default=[], metavar="PATH",
                   help="probe this path too (a pty, a socket:// URL); repeatable")
    p.add_argument("--usb-id", action="append", default=[], metavar="VID:PID",
                   help="probe USB devices with this VID:PID too (hex); repeatable")
    p.add_argument("--no-usb", action="store_true", help="do not look at USB devices")
    p.add_argument("--no-serial", action="store_true", help="do not list the OS's serial ports")
    p.set_defaults(func=main)


def _parse_id(text: str) -> tuple[int, int]:
    vid, sep, pid = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return int(vid, 16), int(pid, 16)
    except ValueError:
        raise UsageError(f"--usb-id wants VID:PID in hex, e.g. 1209:0001, not {text!r}") from None


def main(args) -> int:
    if args.timeout_ms <= 0:
        raise UsageError("--timeout-ms must be at least 1")
    ids = [_parse_id(t) for t in args.usb_id]
    if args.json:
        check_writable(args.json, "--json")
    t0 = time.monotonic()
    ports, notes = scan(also=args.also, usb_ids=ids, timeout_ms=args.timeout_ms, serial=not args.no_serial,
                        usb=not args.no_usb)
    took_ms = (time.monotonic() - t0) * 1000
    console = output_console()
    table = Table(title=f"ports ({took_ms:.0f} ms)")
    for col in ("port", "status", "unit", "serial", "fw", "protocol", "ms"):
        table.add_column(col, justify="right" if col in ("serial", "ms") else "left", no_wrap=col != "port",
                         overflow="fold")
    style = {"unit": "green", "no answer": "dim", "error": "red", "not a unit": "yellow"}
    details = []
    for p in ports:         # what the OS and the devices call themselves is printed escaped, never as markup
        table.add_row(Text(printable(p.port)), Text(p.status, style=style.get(p.status, "")), p.kind or "",
                      "" if p.serial is None else str(p.serial), Text(printable(p.firmware or "")),
                      Text(printable(p.protocol or "")), "" if p.probe_ms is None else f"{p.probe_ms:.0f}")
        text = "; ".join(x for x in (p.description, p.reason if p.status != "no answer" else "") if x)
        if text:
            details.append(f"{p.port}: {text}")
    if ports:
        print_table(console, table)
        for line in details:
            console.print(Text(printable(line)), soft_wrap=True)
    else:
        console.print("no serial ports or USB units found")
    for n in notes:
        console.print(Text(printable(n)), soft_wrap=True)
    if args.json:
        write_results(args.json, _json({"timeout_ms": args.timeout_ms, "duration_ms": round(took_ms, 1),
                                        "ports": [p.as_dict() for p in ports], "notes": notes}), "--json")
    return Exit.OK


def _json(doc: dict) -> str:
    return json.dumps(doc, indent=2) + "\n"
