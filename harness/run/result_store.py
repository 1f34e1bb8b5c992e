"""Where a long run's finished scenarios go: their JSON on disk as each ends, a summary in memory.

A run of 100,000 races cannot hold every race until it ends (~2.7 KB each even packed: its env,
verdicts, figures and frames). Each scenario's part of the results file (every race with its events,
results_json's text of it) is appended to an unnamed temporary file the moment the scenario ends,
and the run keeps the scenario's kept() form: the races that did not pass, the summaries and the
JUnit record. The results file is assembled from the store at the end, in the scenarios' order,
a piece at a time. The file is unlinked from the start, so nothing is left behind whatever ends
the process; it lies beside the results file (the same file system, not a tmpfs in memory).
"""
from __future__ import annotations

import os
import tempfile
import threading
from functools import partial
from pathlib import Path

from unohil.harness.run.results import ScenarioResult

PIECE = 1 << 20         # read back a scenario's text this much at a time


class ResultStore:
    """Append-only: put() a finished scenario, text() its JSON back when the results file is written."""

    def __init__(self, beside: str | os.PathLike | None, text_of_verdict, json_of):
        """beside: the results file (the store goes in its folder; None: the system's temporary folder);
        text_of_verdict(unit, verdict): a verdict as the console names it; json_of: a scenario result's JSON text."""
        folder = _folder(beside)
        self._fh = tempfile.TemporaryFile(dir=folder, prefix=".unohil-results-",
                                          buffering=0) if json_of is not None else None
        self._end = 0
        self.failure: str | None = None     # why the store was given up, if it was
        self._json_of = json_of
        self._text_of_verdict = text_of_verdict
        self._lock = threading.Lock()       # the rack's worker threads finish scenarios at once
        self._where: dict[int, tuple[int, int]] = {}   # id of a kept result -> offset, length in the file
        self._held: list[ScenarioResult] = []          # keeps those ids from being reused

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def put(self, res: ScenarioResult) -> ScenarioResult:
        """res written out; what the run keeps of it. A store that cannot be written (a full disk)
        is given up: this result and the later ones stay whole in memory, as before there was one."""
        if self._fh is None:
            return res.kept(partial(self._text_of_verdict, res.scenario.unit))
        return self.put_text(res, self._json_of(res))

    def put_text(self, res: ScenarioResult, text: str) -> ScenarioResult:
        """put(), given the result's JSON text already made (by a worker process of `run -j`): res may
        already be the kept() form, which is then kept as it is."""
        if self._fh is None:
            return res.kept(partial(self._text_of_verdict, res.scenario.unit))
        data = text.encode("ascii")      # json.dumps escapes everything else
        with self._lock:
            if self.failure is not None:
                return res
            at = self._end
            try:
                done = 0
                while done < len(data):     # written through (no buffer a later failure could lose)
                    done += os.pwrite(self._fh.fileno(), data[done:], at + done)
            except OSError as exc:          # what was written before stays readable
                self.failure = exc.strerror or str(exc)
                return res
            self._end += len(data)
            kept = res.kept(partial(self._text_of_verdict, res.scenario.unit))
            self._where[id(kept)] = at, len(data)
            self._held.append(kept)
        return kept

    @property
    def keeps_text(self) -> bool:
        """Whether put() writes each scenario's JSON (there is a results file or a results store to make)."""
        return self._fh is not None

    def holds(self, res: ScenarioResult) -> bool:
        return id(res) in self._where

    def text(self, res: ScenarioResult):
        """The JSON text of a result put() here, in pieces."""
        at, n = self._where[id(res)]
        end = at + n
        while at < end:
            piece = os.pread(self._fh.fileno(), min(PIECE, end - at), at)
            if not piece:
                raise OSError(f"the run's result store ended {end - at} bytes early")
            at += len(piece)
            yield piece.decode("ascii")

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()


def _folder(beside) -> str | None:
    """The results file's folder when it is a place to write files (a FIFO's or /dev's is not)."""
    if beside is None:
        return None
    folder = Path(os.path.realpath(beside)).parent
    try:
        probe = tempfile.TemporaryFile(dir=folder)
    except OSError:
        return None
    probe.close()
    return str(folder) if not str(folder).startswith(("/dev", "/proc")) else None
