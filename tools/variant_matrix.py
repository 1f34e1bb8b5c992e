"""Every allowed form of every emulated unit, run through the whole library and conform on the virtual clock.

    python -m tools.variant_matrix [--kinds showdown,flash,launcher] [--markdown]

The forms are the ones the SPEC lets a unit take without failing anything: the reference unit, another
generator (rng=python), a timer handler that stamps late (timer_lag_us=2000, PR-1), the Showdown without
its landing sensor (SD-11) and without a throw on a false start (SD-3), and each optional capability
left out (without=CAP). For each, `unohil run` of the kind's library and `unohil conform` with it: a
right unit of any allowed form must fail nothing (passes or skips with a reason; conform CONFORMS or
PARTIAL). Exit status 1 if any form failed anything.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

from unohil.protocol import catalogue as cat

#: capabilities a game unit may lack (a command of its own, or a form of the unit); rig_lines is the rig's
OPTIONAL = ("test_mode", "host_input", "time_sync", "event_resend", "config_set")
#: Showdown forms the SPEC allows besides the reference one (SD-11, SD-3)
SHOWDOWN_FORMS = ("landing_sensor=0", "false_start_launch=0", "landing_sensor=0&false_start_launch=0")


def variants(kind: str) -> list[str]:
    out = ["", "rng=python", "timer_lag_us=2000"]
    if kind == "showdown":
        out += list(SHOWDOWN_FORMS)
    out += [f"without={cap}" for cap in OPTIONAL]
    return out


def _cli(argv: list[str]) -> int:
    from unohil.harness.cli import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def measure(kind: str, variant: str) -> dict:
    url = f"emu://{kind}" + (f"?{variant}" if variant else "")
    with tempfile.TemporaryDirectory() as tmp:
        run_json, conform_json = Path(tmp, "run.json"), Path(tmp, "conform.json")
        run_rc = _cli(["run", "--device", url, "--json", str(run_json)])
        conform_rc = _cli(["conform", "--device", url, "-q", "--json", str(conform_json)])
        summary = json.loads(run_json.read_text())["summary"]
        report = json.loads(conform_json.read_text())
    checks = report["checks"]
    return {"url": url, "run_rc": run_rc, "passed": summary["passed"], "failed": summary["failed"],
            "skipped": summary["skipped"], "other": summary["error"] + summary["link_error"] + summary["reset"],
            "conform_rc": conform_rc, "verdict": report["verdict"],
            "conform_failed": sum(c["status"] in ("fail", "error") for c in checks),
            "conform_passed": sum(c["status"] == "pass" for c in checks)}


def bad(row: dict) -> bool:
    return bool(row["failed"] or row["other"] or row["conform_failed"] or row["run_rc"]
                or row["verdict"] not in ("CONFORMS", "PARTIAL"))


def table(rows: list[dict]) -> str:
    lines = ["| unit | run: passed / failed / skipped | conform: verdict, checks passed / failed |",
             "|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['url']}` | {r['passed']} / {r['failed']} / {r['skipped']}"
                     + (f" (+{r['other']} errors)" if r["other"] else "")
                     + f" | {r['verdict']}, {r['conform_passed']} / {r['conform_failed']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.variant_matrix", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(k for k in cat.UNITS),
                        help="unit kinds, comma-separated (default: every game unit)")
    args = parser.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in cat.UNITS]
    if unknown:
        parser.error(f"unknown unit kind(s) {', '.join(unknown)}; use {', '.join(cat.UNITS)}")
    rows = [measure(kind, v) for kind in kinds for v in variants(kind)]
    print(table(rows))
    return 1 if any(bad(r) for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
