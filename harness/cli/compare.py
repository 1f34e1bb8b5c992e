"""unohil compare A B: what changed from run A to run B (results files, or runs in a results store)."""
from __future__ import annotations

import json
import sys

from unohil.harness.cli.exit import Exit
from unohil.harness.errors import UsageError
from unohil.harness.store.compare import ALPHA, DEVICE_FIGURES, EFFECT, Comparison, compare
from unohil.harness.text import duration_rounded, printable

FAIL_ON = ("never", "regression", "change")


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="what changed between two runs: verdicts, scenarios, latency distributions")
    p.add_argument("a", metavar="A", help="the earlier run: a results file (run --json), run:ID or firmware:VERSION "
                                          "or latest (from --store), or last-release: the newest stored run of the "
                                          "same kind of unit on another firmware than B's, before B")
    p.add_argument("b", metavar="B", help="the later run, the same ways")
    from unohil.harness.store.config import add_store_argument
    add_store_argument(p, "for run:ID, firmware:VERSION and latest, read")
    p.add_argument("--figure", action="append", metavar="NAME",
                   help=f"a latency figure to compare (repeatable; default {', '.join(DEVICE_FIGURES)})")
    p.add_argument("--alpha", type=float, default=ALPHA, help=f"significance level (default {ALPHA})")
    p.add_argument("--fail-on", choices=FAIL_ON, default="never",
                   help="exit 1 on a regression (a verdict that no longer passes, a scenario gone, a figure slower) "
                        "or on any change; default never")
    p.add_argument("--json", metavar="FILE", help="write the comparison as JSON")
    p.set_defaults(func=main)


def load(spec: str, store_arg: str | None) -> tuple[dict, str]:
    """A run named on the command line: (its document, how to call it)."""
    if spec.startswith(("run:", "firmware:")) or spec == "latest":
        from unohil.harness.cli.history import open_configured
        from unohil.harness.store import history
        from unohil.harness.store.record import stored_run
        with open_configured(store_arg) as store:
            if spec == "latest":
                run_id = history.latest_run(store)
            elif spec.startswith("run:"):
                try:
                    run_id = int(spec[4:])
                except ValueError:
                    raise UsageError(f"{spec}: run:ID takes a stored run's number") from None
            else:
                run_id = history.run_with_firmware(store, spec.split(":", 1)[1])
            if run_id is None:
                raise UsageError(f"{spec}: no such run in the store")
            return stored_run(store, run_id), f"run {run_id}"
    from unohil.harness.report.results_json import read_results
    return read_results(spec), spec


def _last_release(b: dict, store_arg: str | None) -> tuple[dict, str]:
    from unohil.harness.cli.history import open_configured
    from unohil.harness.store import history
    from unohil.harness.store.record import stored_run
    with open_configured(store_arg) as store:
        run_id = history.release_before(store, b)
        if run_id is None:
            raise UsageError("last-release: no stored run before B of a unit of its kind on another firmware")
        return stored_run(store, run_id), f"run {run_id} (last release)"


def main(args) -> int:
    b, name_b = load(args.b, args.store)
    a, name_a = _last_release(b, args.store) if args.a == "last-release" else load(args.a, args.store)
    result = compare(a, b, tuple(args.figure or DEVICE_FIGURES), args.alpha)
    for line in lines(result, name_a, name_b, args.alpha):
        print(printable(line))
    if args.json:
        from unohil.harness.report.results_json import write_json
        write_json(args.json, {"a": name_a, "b": name_b, **result.as_dict()})
    if args.fail_on == "regression" and result.regressions:
        print(f"{len(result.regressions)} regression(s): --fail-on regression", file=sys.stderr)
        return Exit.FAILED
    if args.fail_on == "change" and result.any:
        print("changes: --fail-on change", file=sys.stderr)
        return Exit.FAILED
    return Exit.OK


def lines(c: Comparison, name_a: str, name_b: str, alpha: float) -> list[str]:
    out = [f"{name_a} -> {name_b}: {c.compared} scenarios in both"]
    if c.changed:
        out.append(f"verdicts changed ({len(c.changed)}):")
        out += [f"  {name}: {a} -> {b}" for name, a, b in c.changed]
    if c.gone:
        out.append(f"gone ({len(c.gone)}):")
        out += [f"  {name}" for name in c.gone]
    if c.added:
        out.append(f"added ({len(c.added)}):")
        out += [f"  {name}" for name in c.added]
    if c.moved:
        out.append(f"figures that moved ({len(c.moved)}; Brunner-Munzel p < {alpha:g}, |P(A<B) - 1/2| >= {EFFECT}):")
        out += [f"  {m.scope}: {m.figure} median {duration_rounded(m.median[0])} -> {duration_rounded(m.median[1])} "
                f"({'slower' if m.slower else 'faster'}; n {m.n[0]}/{m.n[1]}, P(A<B) {m.p_hat:.2f}, p {m.p_value:.2g})"
                for m in c.moved]
    if not c.any:
        out.append("no changes")
    elif c.regressions:
        out.append(f"regressions: {len(c.regressions)}")
    return out
