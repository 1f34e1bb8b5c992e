"""unohil schema: the JSON Schema of scenario files, for editors (yaml-language-server)."""
from __future__ import annotations

import json
import sys

from unohil.harness.cli.exit import Exit
from unohil.harness.report.files import check_writable, write_results
from unohil.harness.report.scenario_schema import scenario_schema


def add_parser(sub) -> None:
    p = sub.add_parser("schema", help="the JSON Schema of scenario files, for editors",
                       description="Print (or write) a JSON Schema of the scenario format, derived from the "
                                   "catalogue, so an editor with yaml-language-server checks and completes "
                                   "scenarios as they are typed (reports.md in the uno-hil docs says how to set "
                                   "it up).")
    p.add_argument("-o", "--output", metavar="FILE", help="write it to FILE (default: standard output)")
    p.set_defaults(func=main)


def main(args) -> int:
    text = json.dumps(scenario_schema(), indent=1) + "\n"
    if args.output:
        check_writable(args.output, "--output")
        write_results(args.output, text)
    else:
        sys.stdout.write(text)
    return Exit.OK
