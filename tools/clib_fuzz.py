"""Fuzz clib's receiver and message decoder with libFuzzer (clib/fuzz/fuzz_rx.c).

    python -m tools.clib_fuzz --seconds 600      a longer run than CI's; prints the figures
    python -m tools.clib_fuzz --seed-corpus      (re)write clib/fuzz/corpus from fixtures/vectors' streams
    python -m tools.clib_fuzz --merge DIR        add to clib/fuzz/corpus the inputs of DIR that reach new coverage

The corpus kept in the repository is read, never written, by a run: new inputs go to the run's own
directory. A crash or a broken promise (the target aborts) leaves its input as crash-* in that directory
and makes the run fail.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tools.clib_build import CLIB, make

CORPUS = CLIB / "fuzz" / "corpus"
VECTORS_JSON = CLIB.parent / "fixtures" / "vectors" / "vectors.json"


@dataclass
class FuzzResult:
    returncode: int
    executions: int
    seconds: int
    coverage: int          # edges (libFuzzer's cov:)
    features: int          # libFuzzer's ft:
    corpus: int            # inputs in the run's corpus at the end
    crashes: list[Path]
    log: str

    def summary(self) -> str:
        found = f"{len(self.crashes)} crash(es): {', '.join(map(str, self.crashes))}" if self.crashes else "no findings"
        return (f"{self.executions} executions in {self.seconds} s ({self.executions // max(1, self.seconds)}/s), "
                f"coverage {self.coverage} edges, {self.features} features, corpus {self.corpus} inputs; {found}")


def seed_corpus() -> list[Path]:
    """One file per stream vector and receiver table: the first byte picks the table (0 device, 1 host)."""
    data = json.loads(VECTORS_JSON.read_text(encoding="utf-8"))
    CORPUS.mkdir(parents=True, exist_ok=True)
    written = []
    for s in data["streams"]:
        for table, selector in (("device", 0), ("host", 1)):
            path = CORPUS / f"{s['label']}-{table}"
            path.write_bytes(bytes([selector]) + bytes.fromhex(s["stream_hex"]))
            written.append(path)
    return written


def run(seconds: int, build: Path, work: Path) -> FuzzResult:
    make(build, "fuzz-build", timeout=600)
    work.mkdir(parents=True, exist_ok=True)
    new = work / "corpus"
    new.mkdir(exist_ok=True)
    r = subprocess.run([str(build / "fuzz_rx"), f"-max_total_time={seconds}", "-max_len=512", "-print_final_stats=1",
                        f"-artifact_prefix={work}/", str(new), str(CORPUS)],
                       capture_output=True, text=True, timeout=seconds + 300)
    log = r.stderr
    def last(pattern: str) -> int:
        found = re.findall(pattern, log)
        return int(found[-1]) if found else 0
    return FuzzResult(
        returncode=r.returncode,
        executions=last(r"stat::number_of_executed_units:\s*(\d+)"),
        seconds=last(r"Done \d+ runs in (\d+) second") or seconds,
        coverage=last(r"\bcov: (\d+)"),
        features=last(r"\bft: (\d+)"),
        corpus=len(list(new.iterdir())) + len(list(CORPUS.iterdir())),
        crashes=sorted(work.glob("crash-*")) + sorted(work.glob("leak-*")) + sorted(work.glob("timeout-*")),
        log=log)


def merge(directory: Path, build: Path) -> str:
    make(build, "fuzz-build", timeout=600)
    r = subprocess.run([str(build / "fuzz_rx"), "-merge=1", str(CORPUS), str(directory)], capture_output=True,
                       text=True)
    return r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.clib_fuzz", description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--seconds", type=int, default=60, help="how long to fuzz (default 60)")
    g.add_argument("--seed-corpus", action="store_true", help="rewrite clib/fuzz/corpus from the stream vectors")
    g.add_argument("--merge", type=Path, metavar="DIR", help="merge DIR's new coverage into clib/fuzz/corpus")
    ap.add_argument("--work", type=Path, help="where the run's corpus and findings go (default: a new temp dir)")
    args = ap.parse_args(argv)
    if args.seed_corpus:
        print(f"{CORPUS}: {len(seed_corpus())} inputs written")
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="clib-fuzz-"))
    if args.merge:
        print(merge(args.merge, work / "build"))
        return 0
    if args.seconds < 1:
        ap.error("--seconds must be at least 1")
    result = run(args.seconds, work / "build", work)
    print(result.summary())
    print(f"run's corpus and findings: {work}")
    if result.returncode != 0 or result.crashes:
        print(result.log[-3000:], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
