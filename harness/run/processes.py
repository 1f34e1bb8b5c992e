"""`unohil run -j N`: virtual-clock units spread over N worker processes, merged into one run.

Only `emu://` units on the virtual clock: what they do does not depend on when or where they run. A unit
keeps state from one scenario to the next (its random generator, for one), so a unit's scenarios are never
split: each unit of the rack, with the scenarios it would run in one process (in the same order), goes to
one worker, and the units are dealt to the workers by their number of races. That way each scenario meets
its unit in the state it would in one process, and the merged report is the one process's.

Each worker builds its own in-process emulators from the units' URLs and sends back, per scenario, what
the run keeps of it (the kept() result) and its results-file JSON text, which the parent puts in its
ResultStore: memory stays flat however many races there are. The parent alone takes the signals: the
first asks the workers to stop after the race in progress (as one process does), a second ends them.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from dataclasses import dataclass, replace
from functools import partial
from typing import Callable
from urllib.parse import parse_qs, urlsplit

from unohil.harness.session.health import LinkHealth

POLL_S = 0.2        # how often the parent looks at the workers and at its stop request while none reports


def why_not_parallel(urls: list[str], args) -> str | None:
    """Why these units or options cannot be spread over processes (one line), or None when they can."""
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme != "emu" or parse_qs(parts.query).get("clock") != ["virtual"]:
            return f"{url} is not an emulator on the virtual clock (emu://KIND?clock=virtual)"
    for option, given in (("--rig", args.rig), ("--attended", args.attended), ("--firmware", args.firmware),
                          ("--lifecycle", args.lifecycle), ("--console", args.console), ("--trace", args.trace)):
        if given:
            return f"{option} drives its units from this process"
    return None


@dataclass(frozen=True)
class WorkerSetup:
    """What each worker needs to build its runners (sent once, when it starts)."""
    host_timed: bool
    rerun_failed: int
    outage_budget: int
    # a scenario result's results-file JSON text (report's scenario_json; None: the parent keeps no races),
    # and a verdict as the console names it (text_of_verdict(unit, verdict)): module-level functions, so
    # they reach the workers by name
    json_of: Callable | None
    text_of_verdict: Callable


@dataclass
class Stream:
    """One unit of the rack (its place and URL) and the scenarios it runs, in order: (place in the run, scenario)."""
    unit: int
    url: str
    scenarios: list[tuple[int, object]]

    def races(self) -> int:
        return sum(len(sc.races) for _, sc in self.scenarios)


@dataclass
class Finished:
    """A scenario as a worker sends it back."""
    index: int
    kept: object                    # ScenarioResult.kept()
    json_text: str | None


@dataclass
class WorkerDone:
    """A worker's last word: its units as Rack.describe() says them (their link health), by place in the rack."""
    units: dict[int, dict]
    error: str | None = None


def streams_for(scenarios: list, urls: list[str], kinds: list[str]) -> tuple[list[Stream], list[int]]:
    """Each unit's stream, and the places of the scenarios no unit runs. A kind's scenarios go, in order, to
    its one unit; with several units of a kind, dealt out in turn (one process spreads those by who is free)."""
    units_of: dict[str, list[int]] = {}
    for place, kind in enumerate(kinds):
        units_of.setdefault(kind, []).append(place)
    streams = [Stream(place, url, []) for place, url in enumerate(urls)]
    dealt: dict[str, int] = {}
    unserved = []
    for i, sc in enumerate(scenarios):
        places = units_of.get(sc.unit)
        if not places:
            unserved.append(i)
            continue
        n = dealt.get(sc.unit, 0)
        dealt[sc.unit] = n + 1
        streams[places[n % len(places)]].scenarios.append((i, sc))
    return [s for s in streams if s.scenarios], unserved


def deal(streams: list[Stream], jobs: int) -> list[list[Stream]]:
    """The streams in at most `jobs` groups of about equal races (largest first, each to the lightest group)."""
    groups: list[list[Stream]] = [[] for _ in range(min(jobs, len(streams)))]
    load = [0] * len(groups)
    for s in sorted(streams, key=Stream.races, reverse=True):
        g = load.index(min(load))
        groups[g].append(s)
        load[g] += s.races()
    return groups


def _serve(setup: WorkerSetup, streams: list[Stream], out, stop_signal) -> None:
    """A worker: its units opened here, each unit's scenarios in order, each result sent as it ends."""
    for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)       # Ctrl-C reaches the whole group: the parent decides
    from unohil.harness.run.parallel import Rack
    from unohil.harness.run.runner import Runner
    from unohil.harness.session.outage import Outage

    def stop() -> str | None:
        return f"interrupted by {signal.Signals(stop_signal.value).name}" if stop_signal.value else None
    rack = None
    try:
        rack = Rack.open([s.url for s in streams], set())
        if rack.unopened:
            raise RuntimeError("; ".join(f"{u.url}: not opened: {u.error}" for u in rack.unopened))
        for stream, driver in zip(streams, rack.drivers):
            runner = Runner(driver, host_timed=setup.host_timed, stop=stop, outage=Outage(setup.outage_budget),
                            rerun_failed=setup.rerun_failed)
            for i, sc in stream.scenarios:
                if stop():
                    break
                res = runner.run(sc)
                text = setup.json_of(res) if setup.json_of is not None else None
                out.put(Finished(i, res.kept(partial(setup.text_of_verdict, sc.unit)), text))
        described = rack.describe()
        out.put(WorkerDone({s.unit: d for s, d in zip(streams, described)}))
    except Exception as exc:        # the parent says it; the scenarios this worker did not send are not run
        out.put(WorkerDone({}, f"{type(exc).__name__}: {exc}"))
    finally:
        if rack is not None:
            rack.close()


class ProcessRun:
    """Runs the streams on up to `jobs` worker processes; done(finished) is called in the parent as each
    scenario ends. stop() gives the signal that asks the run to stop (None: go on)."""

    def __init__(self, jobs: int, setup: WorkerSetup):
        self.jobs = jobs
        self.setup = setup
        self.units: dict[int, dict] = {}        # by place in the rack: the unit as its worker last said it
        self.errors: list[str] = []

    def run(self, streams: list[Stream], done: Callable[[Finished], None], stop: Callable[[], int | None]) -> None:
        method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
        ctx = multiprocessing.get_context(method)
        out = ctx.Queue()
        stop_signal = ctx.Value("i", 0, lock=False)
        workers = [ctx.Process(target=_serve, args=(self.setup, group, out, stop_signal), daemon=True,
                               name=f"unohil-run-{n}") for n, group in enumerate(deal(streams, self.jobs))]
        try:
            for w in workers:
                w.start()
            left = len(workers)
            while left:
                signum = stop()
                if signum is not None:
                    stop_signal.value = signum
                try:
                    got = out.get(timeout=POLL_S)
                except queue.Empty:
                    if not any(w.is_alive() for w in workers) and out.empty():
                        self.errors.append("a worker process ended without its results")
                        break
                    continue
                if isinstance(got, WorkerDone):
                    left -= 1
                    self.units.update(got.units)
                    if got.error:
                        self.errors.append(got.error)
                else:
                    done(got)
        except BaseException:
            for w in workers:
                w.terminate()       # a second signal: the scenarios in progress are abandoned
            raise
        finally:
            for w in workers:
                w.join(timeout=5)

    def devices(self, described: list[dict]) -> list[dict]:
        """The parent's account of its units, each replaced by its worker's (which ran its races)."""
        return [self.units.get(place, d) for place, d in enumerate(described)]

    def health(self) -> LinkHealth:
        total = LinkHealth()
        for u in self.units.values():
            if u.get("health") is not None:
                total.add(LinkHealth(**u["health"]))
        return total


def merged(kept, scenario):
    """A worker's result, naming the parent's own scenario object (the report finds scenarios by identity)."""
    return replace(kept, scenario=scenario)
