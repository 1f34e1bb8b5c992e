"""unohil library: where the installed scenario library is and what it holds, or one of its folders' paths
(for a shell: `unohil run --attended $(unohil library --path attended)`)."""
from __future__ import annotations

from collections import Counter

from unohil.harness.cli.exit import Exit
from unohil.harness.scenarios.library import set_path


def add_parser(sub) -> None:
    p = sub.add_parser("library", help="where the scenario library that ships with uno-hil is, and what it holds")
    p.add_argument("--path", nargs="?", const="scenarios", metavar="PART",
                   help="print only the folder of PART: scenarios (the unattended library, the default), attended "
                        "(the scenarios that wait for a person, for run --attended) or a unit kind")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.path is not None:
        print(set_path(args.path))
        return Exit.OK
    for line in describe():
        print(line)
    return Exit.OK


def describe() -> list[str]:
    """The library's folders, each with its files and scenarios (by unit kind)."""
    from unohil.harness.scenarios.load import discover, load_paths
    unattended = set_path("scenarios")
    out = [f"scenario library: {unattended}", "  (unohil run and conform use it when given no scenario files)"]
    for kind in sorted(p.name for p in unattended.iterdir() if p.is_dir()):
        folder = unattended / kind
        files = discover([str(folder)])
        counts = f"{_count(len(files), 'file')}, {_count(len(load_paths([str(folder)])), 'scenario')}"
        out.append(f"  {kind:<9} {counts:<24} {folder}")
    attended = set_path("attended")
    found = load_paths([str(attended)])
    kinds = Counter(s.unit for s in found)
    out.append(f"attended: {attended}")
    out.append(f"  {_count(len(discover([str(attended)])), 'file')}, {_count(len(found), 'scenario')} that wait "
               f"for a person ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))}): "
               f"unohil run --attended --device URL {attended}")
    return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"

