"""unohil validate: check scenario files without running them."""
from __future__ import annotations

from unohil.harness.cli.exit import Exit
from unohil.harness.errors import ScenarioError
from unohil.harness.scenarios.load import load_paths, print_warnings


def add_parser(sub) -> None:
    p = sub.add_parser("validate", help="check scenario files without running them")
    p.add_argument("paths", nargs="+", metavar="PATH", help="scenario files or directories (every .yaml/.yml under them)")
    p.set_defaults(func=main)


def main(args) -> int:
    try:
        scenarios = load_paths(args.paths)
    except ScenarioError as exc:
        exc.print()             # validating is all this command does: no "nothing was run"
        return Exit.USAGE
    print_warnings(scenarios)
    races = sum(len(s.races) for s in scenarios)
    print(f"{len(scenarios)} scenario(s), {races} race(s): valid")
    return Exit.OK
