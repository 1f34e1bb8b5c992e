"""The replay-against-recording comparison: alignment by event order, field and time differences."""
from __future__ import annotations

from unohil.harness.record.diff import compare, summary

REC = [(0, "SD_CARDS", {"cards": 2}), (1000, "SD_COUNTDOWN", {"cards": 2}), (3001000, "SD_GREEN", {}),
       (3201000, "SD_LAUNCH", {"toward": "b"}), (3202000, "SD_VERDICT", {"loser": "b", "reason": "first_press"})]


def test_an_identical_replay_matches_row_by_row():
    rows = compare(REC, list(REC))
    assert [r.kind for r in rows] == ["same"] * 5
    assert summary(rows) == "5 event(s) as recorded, 0 differ, 0 missing, 0 not recorded"


def test_a_field_and_a_time_that_differ_are_named():
    replay = REC[:4] + [(3451000, "SD_LANDING", {}), (3452000, "SD_VERDICT", {"loser": "a", "reason": "line_tiebreak"})]
    rows = compare(REC, replay, tolerance_us=10)
    assert [r.kind for r in rows] == ["same", "same", "same", "same", "new", "differs"]
    last = rows[-1]
    assert last.fields == ("loser", "reason") and last.late_us == 250_000
    assert last.describe().endswith("!= loser: b -> a, reason: first_press -> line_tiebreak; +250000 us")
    assert rows[4].describe().startswith("not recorded  <-     3451000 us SD_LANDING")


def test_a_time_within_the_tolerance_is_the_same_and_a_missing_event_is_said():
    replay = [(0, "SD_CARDS", {"cards": 2}), (1005, "SD_COUNTDOWN", {"cards": 2})]
    rows = compare(REC, replay, tolerance_us=5)
    assert [r.kind for r in rows] == ["same", "same", "missing", "missing", "missing"]
    assert compare(REC, replay, tolerance_us=4)[1].late_us == 5
    assert rows[2].describe() == "    3001000 us SD_GREEN  -> not in the replay"
