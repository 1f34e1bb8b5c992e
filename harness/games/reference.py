"""A failed game as a scenario that reproduces the failure: the game's stimuli played again, at the
same device times from the game's start, on the reference emulator (SPEC 6's generator, the same seed,
configuration and landing sensor), and recorded there (harness/record). The scenario then expects
what a conforming unit does with those inputs, so `unohil run` of it on the unit that failed the
game fails where the game did. Only a unit with reference_rng draws what the emulator draws; for any
other, the game's own trace is recorded instead, which says what the unit did.
"""
from __future__ import annotations

import json
from pathlib import Path

from unohil.harness.record.scenario import dump, scenario_of
from unohil.harness.record.segments import segments_of
from unohil.harness.session.driver import Driver
from unohil.harness.session.trace import TraceWriter

SETTLE_US = 30_000_000          # after the last stimulus, time for the verdicts it causes


def scenario_text(kind: str, trace_path: Path, name: str, header: list[str], reference: bool = False) -> str:
    """The trace's scenario file; reference: the trace is the reference emulator's, whose IDENTITY it lacks
    (its seed then means the same draws on any unit with reference_rng)."""
    records = [json.loads(line) for line in trace_path.read_text(encoding="utf-8").splitlines() if line]
    # one piece for the game: its showdowns run on without a reset between them, and a scenario cut at each
    # one's empty tray would start each from a new game, where nothing the unit carried over can show
    segments = segments_of(records, kind=kind, whole=True)
    for seg in segments:
        seg.reference_rng = seg.reference_rng or reference
    return dump([scenario_of(seg, f"{name} {i + 1}") for i, seg in enumerate(segments)], header) if segments else ""


def conforming_trace(unit, directory: Path, stem: str) -> Path:
    """The game's stimuli on the reference emulator, traced into directory/stem.jsonl from the game's set-up
    on (a traced RESET would make the first door or switch edge the piece's set-up, not one of its steps)."""
    options = "?landing_sensor=0" if unit.kind == "showdown" and not getattr(unit, "sensor", True) else ""
    with Driver.open(f"emu://{unit.kind}{options}") as d:
        d.cancel_injections()
        d.reset("new_game")
        trace = d.trace = TraceWriter(directory, stem)
        try:
            d.apply_config(unit.config)
            d.config_set("rng_seed", unit.seed)
            d.confirm_events()
            start = d.last_reply_dev_us
            last = start
            # in time order: a game sends some stimuli out of it (the Showdown's paddle A before an earlier
            # paddle B), and waiting for one paced as sent would leave the earlier one too late
            for offset, name, action, value in sorted(unit.stimuli, key=lambda s: s[0]):
                at = start + offset
                if at - 1000 > d.last_reply_dev_us:
                    d.wait_until(at - 1000)          # paced as the game sent them: the unit holds 16 at most
                d.inject(at, name, action, value)
                last = max(last, at)
            d.wait_until(last + SETTLE_US)
        finally:
            d.trace = None
            trace.close()
    return trace.path
