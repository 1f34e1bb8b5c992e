"""messages.yaml's schema: a broken catalogue fails at load with the file, line and column to fix."""
from __future__ import annotations

import re
from importlib import resources

import pytest
import yaml

from unohil.protocol import catalogue as cat
from unohil.protocol.schema import CatalogueError, load_catalogue, load_decisions

TEXT = resources.files("unohil.protocol").joinpath("messages.yaml").read_text(encoding="utf-8")


def broken(old: str, new: str, mark: str) -> tuple[str, str]:
    """The catalogue with old replaced by new, and "line:col" of mark, which lies in new."""
    assert TEXT.count(old) == 1, old
    start = TEXT.index(old)
    text = TEXT[:start] + new + TEXT[start + len(old):]
    pos = start + new.index(mark)
    line = text.count("\n", 0, pos) + 1
    col = pos - text.rfind("\n", 0, pos)
    return text, f"{line}:{col}"


def fails(text: str) -> str:
    with pytest.raises(CatalogueError) as info:
        load_catalogue(text, "messages.yaml")
    return str(info.value)


def test_the_catalogue_loads_as_plain_yaml_does():
    raw = yaml.safe_load(TEXT)
    for m in raw["messages"]:
        m.setdefault("fields", [])
    assert load_catalogue(TEXT, "messages.yaml") == raw == cat.RAW
    assert issubclass(CatalogueError, ValueError)


def test_unknown_key():
    text, at = broken("    reply: IDENTITY\n    doc: \"Start of a session. The reply identifies the unit.\"\n    fields:",
                      "    reply: IDENTITY\n    doc: \"Start of a session. The reply identifies the unit.\"\n    feilds:",
                      "feilds")
    assert fails(text) == (f"messages.yaml:{at}: message HELLO: unknown key 'feilds' "
                           "(allowed: capability, class, doc, fields, id, name, reply, units)")


def test_bad_type():
    text, at = broken("{name: host_major, type: u8,", "{name: host_major, type: u9,", "u9")
    assert fails(text) == (f"messages.yaml:{at}: message HELLO field host_major type: unknown type 'u9' "
                           "(allowed: u8, u16, u32, u64, i8, i16, i32)")


def test_unknown_enum_reference():
    text, at = broken("{name: mode, type: u8, enum: reset_mode}", "{name: mode, type: u8, enum: reset_mod}",
                      "reset_mod}")
    message = fails(text)
    assert message.startswith(f"messages.yaml:{at}: message RESET field mode enum: unknown enum 'reset_mod' (allowed: ")
    assert "reset_mode" in message


def test_duplicate_id():
    text, at = broken("  - name: TIME_SYNC\n    id: 0x02", "  - name: TIME_SYNC\n    id: 0x01", "0x01")
    assert fails(text) == f"messages.yaml:{at}: message TIME_SYNC id: 0x01 is already the id of HELLO"


def test_id_outside_its_class_range():
    text, at = broken("  - name: TIME_SYNC\n    id: 0x02", "  - name: TIME_SYNC\n    id: 0x42", "0x42")
    assert fails(text) == f"messages.yaml:{at}: message TIME_SYNC id: 0x42 is outside the command ids 0x01..0x3F"


def test_reply_naming_no_reply_message():
    text, at = broken("    reply: IDENTITY\n", "    reply: TIME_SYNC\n", "TIME_SYNC")
    message = fails(text)
    assert message.startswith(f"messages.yaml:{at}: message HELLO reply: 'TIME_SYNC' is not a reply message "
                              "(allowed: ACK, NAK, IDENTITY")


def test_event_without_event_seq():
    text, at = broken("      - {name: event_seq, type: u16}\n      - {name: boot_id,", "      - {name: boot_id,", "-")
    assert fails(text) == f"messages.yaml:{at}: message BOOT: the first field must be event_seq (u16), as in every event"


def test_unit_anchor_naming_an_unknown_message():
    text, at = broken("      green: SD_GREEN\n", "      green: SD_GREN\n", "SD_GREN")
    message = fails(text)
    assert message.startswith(f"messages.yaml:{at}: unit showdown anchor green: unknown event 'SD_GREN' (allowed: ")
    assert "SD_GREEN" in message and "FL_BUZZER" not in message


def test_unit_cross_rule_naming_an_unknown_param():
    text, at = broken("      - tie_window_us < flight_us\n", "      - tie_window_us < flite_us\n", "tie_window_us")
    message = fails(text)
    assert message.startswith(f"messages.yaml:{at}: unit showdown cross_rules: unknown parameter 'flite_us' "
                              "(allowed: rng_seed, countdown_min_us")


def test_unit_situation_naming_an_unknown_input():
    text, at = broken("report: [paddle_a, release, 0]", "report: [paddle_c, release, 0]", "paddle_c")
    assert fails(text) == (f"messages.yaml:{at}: unit showdown situations.report: unknown input 'paddle_c' "
                           "(allowed: paddle_a, paddle_b, timer, load_cards)")


def test_unit_time_field_must_be_a_u32_field_of_its_events():
    text, at = broken("time_fields: [buzzer_us,", "time_fields: [press_us,", "press_us")
    message = fails(text)
    assert message.startswith(f"messages.yaml:{at}: unit flash time_fields: unknown u32 event field 'press_us'")


def test_missing_unit_and_missing_key():
    text, at = broken("  launcher:\n    title: Card launcher\n", "  launcher:\n    titel: Card launcher\n", "titel")
    assert "unit launcher: unknown key 'titel'" in fails(text)
    assert re.match(r"messages\.yaml:\d+:\d+: catalogue: missing key 'units'$", fails(TEXT.split("\nunits:")[0]))


def test_malformed_yaml_has_a_position_too():
    text, at = broken("  - name: HELLO\n", "  - name: [HELLO\n", "[")
    assert re.match(r"messages\.yaml:\d+:\d+: malformed YAML: ", fails(text))


def test_a_wait_bound_naming_an_unknown_param():
    text, at = broken("      SD_GREEN: countdown_max_us\n", "      SD_GREEN: countdown_maks_us\n", "countdown_maks_us")
    message = fails(text)
    assert message.startswith(f"messages.yaml:{at}: unit showdown latest_after_input SD_GREEN: unknown parameter "
                              f"'countdown_maks_us' (allowed: ")
    assert "countdown_max_us" in message


def test_every_anchor_event_and_the_verdict_need_a_wait_bound():
    text, _ = broken("      LA_RESULT: motor_us + (burst_max - 1) * card_interval_us\n", "", "")
    assert "unit launcher latest_after_input: has no bound for LA_RESULT" in fails(text)


def test_a_wait_bound_is_an_expression():
    text, at = broken("      FL_SLEEP: sleep_after_us\n", "      FL_SLEEP: sleep_after_us.real\n", "sleep_after_us.real")
    assert fails(text).startswith(f"messages.yaml:{at}: unit flash latest_after_input FL_SLEEP: ")


def test_a_switch_position_is_an_edge():
    text, at = broken("door: {closed: [release, 0], open: [press, 0]}", "door: {closed: [shut, 0], open: [press, 0]}",
                      "shut")
    assert fails(text).startswith(f"messages.yaml:{at}: unit launcher switches.door.closed: unknown action 'shut'")


def test_the_wait_bounds_and_boot_positions_as_the_harness_reads_them():
    la = cat.UNITS["launcher"]
    assert la.latest_us("LA_RESULT", {}) == 150_000 + 11 * 40_000
    assert la.latest_us("LA_RESULT", {"burst_max": 2, "motor_us": 0}) == 40_000
    assert cat.UNITS["showdown"].latest_us("SD_VERDICT", {"flight_us": 2_000_000, "countdown_max_us": 500_000,
                                                          "countdown_min_us": 500_000, "go_timeout_us": 100_000}) \
        == 2_000_000
    assert la.boot_positions == {"door": "closed", "power": "on"}
    assert cat.UNITS["flash"].boot_positions == {"speed_switch": "unlimited", "power": "on"}
    assert cat.UNITS["showdown"].switches == {}


# ---- the decision index (decisions.yaml) ----

DECISIONS_TEXT = resources.files("unohil.protocol").joinpath("decisions.yaml").read_text(encoding="utf-8")
UNIT_SECTIONS = {kind: u.section for kind, u in cat.UNITS.items()} | {cat.PROTOCOL_GROUP: cat.PROTOCOL_SECTIONS}


def decisions_fail(old: str, new: str) -> str:
    assert DECISIONS_TEXT.count(old) == 1, old
    with pytest.raises(CatalogueError) as info:
        load_decisions(DECISIONS_TEXT.replace(old, new), UNIT_SECTIONS)
    return str(info.value)


def test_the_decision_index_loads_with_every_kind_numbered_from_one():
    for prefix, group in (("SD", "showdown"), ("FL", "flash"), ("LA", "launcher"), ("PR", cat.PROTOCOL_GROUP)):
        ids = [d.id for d in cat.DECISIONS.values() if d.unit == group]
        assert ids == [f"{prefix}-{i}" for i in range(1, len(ids) + 1)] and len(ids) >= 5
    own = [d for d in cat.DECISIONS.values() if d.unit != cat.PROTOCOL_GROUP]
    assert all(d.section.startswith(cat.UNITS[d.unit].section + ".") and d.text for d in own)
    # a unit follows its own decisions, then the protocol-level ones that concern its kind
    assert [d.id for d in cat.UNITS["flash"].decisions][-6:] == ["PR-1", "PR-3", "PR-4", "PR-5", "PR-6", "PR-7"]
    assert "PR-4" not in {d.id for d in cat.UNITS["showdown"].decisions}


@pytest.mark.parametrize("old, new, words", [
    ("{id: SD-3,", "{id: SD-33,", "SD-33 out of order: expected SD-3"),
    ("{id: SD-3,", "{id: FL-3,", "the showdown unit's decisions are SD-n"),
    ("{id: LA-1,", "{id: SD-1,", "prefix SD is the showdown unit's"),
    ("{id: LA-2,", "{id: LA2,", "'LA2' is not a decision id"),
    ('{id: FL-4, section: "8.3"', '{id: FL-4, section: "7.4"', "'7.4' is not in the flash unit's SPEC section 8"),
    ('{id: SD-1, section: "7.4", text:', '{id: SD-1, section: "7.4", txt:', "unknown key 'txt'"),
    ("launcher:", "laucher:", "unknown key 'laucher'"),
])
def test_a_broken_decision_index_fails_at_its_line(old, new, words):
    problem = decisions_fail(old, new)
    line = DECISIONS_TEXT.replace(old, new)[:DECISIONS_TEXT.index(old)].count("\n") + 1
    assert problem.startswith(f"decisions.yaml:{line}:") and words in problem, problem


@pytest.mark.parametrize("old, new, mark, says", [
    ("valued_inputs: [speed_switch]", "valued_inputs: [speed_dial]", "speed_dial", "unknown input 'speed_dial'"),
    ("scheduled_times: {SD_GREEN: green_us}", "scheduled_times: {SD_GREEN: gren_us}", "gren_us",
     "unknown time field 'gren_us'"),
    ("scheduled_times: {SD_GREEN: green_us}", "scheduled_times: {FL_TIMEOUT: green_us}", "FL_TIMEOUT",
     "unknown event 'FL_TIMEOUT'"),
    ("optional_times: {press_a_us: reaction_a_us,", "optional_times: {press_a_us: cards,", "cards",
     "unknown i32 field of the verdict 'cards'"),
])
def test_the_unit_facts_of_the_decisions_name_what_exists(old, new, mark, says):
    """valued_inputs (PR-3), scheduled_times (PR-1), optional_times (PR-2) are checked at load."""
    text, at = broken(old, new, mark)
    msg = fails(text)
    assert msg.startswith(f"messages.yaml:{at}: ") and says in msg, msg


@pytest.mark.parametrize("old, new, mark, said", [
    ("SD_LANDING: {after: SD_LAUNCH, delay: flight_us}", "SD_LANDING: {after: SD_LAUNCHED, delay: flight_us}",
     "SD_LAUNCHED", "timers SD_LANDING after: unknown event 'SD_LAUNCHED'"),
    ("SD_LANDING: {after: SD_LAUNCH, delay: flight_us}", "SD_LANDING: {after: SD_LAUNCH, delay: flight_ms}",
     "flight_ms", "timers SD_LANDING delay: 'flight_ms' is neither a parameter nor a field of SD_LANDING, SD_LAUNCH"),
    ("SD_LANDING: {after: SD_LAUNCH, delay: flight_us}", "SD_LANDING: {after: SD_LAUNCH, delay: flight_us +}",
     "flight_us +}", "timers SD_LANDING delay: cannot parse 'flight_us +'"),
    ("SD_LANDING: {after: SD_LAUNCH, delay: flight_us}", "SD_LANDING: {after: 'SD_LAUNCH(toward=c)', delay: flight_us}",
     "'SD_LAUNCH(toward=c)'", "timers SD_LANDING after SD_LAUNCH.toward: unknown side 'c'"),
    ("SD_LANDING: {after: SD_LAUNCH, delay: flight_us}", "SD_LANDING: {after: 'SD_LAUNCH(toward)', delay: flight_us}",
     "'SD_LAUNCH(toward)'", "timers SD_LANDING after: 'SD_LAUNCH(toward)': 'toward' is not field=value"),
    ("LA_CARD: {after: LA_DING, delay: motor_us + index * card_interval_us}",
     "LA_CARD: {after: LA_DING, delay: motor_us + press * card_interval_us, when: fired}", "fired",
     "timers LA_CARD when: unknown field 'fired'"),
    ("FL_TIMEOUT: {after: FL_SELECTED, delay: turn_time_us, frozen_by: [FL_PAUSE.paused, FL_SLEEP.asleep]}",
     "FL_TIMEOUT: {after: FL_SELECTED, delay: turn_time_us, frozen_by: [FL_PAUSE.stopped]}", "FL_PAUSE.stopped",
     "timers FL_TIMEOUT frozen_by: FL_PAUSE.'stopped' is not EVENT.field of this unit"),
    ("FL_TIMEOUT: {after: FL_SELECTED, delay: turn_time_us, frozen_by: [FL_PAUSE.paused, FL_SLEEP.asleep]}",
     "FL_TIMEOUT: {after: [FL_SELECTED, FL_TURN_END], delay: turn, frozen_by: [FL_PAUSE.paused]}", "turn, frozen",
     "timers FL_TIMEOUT delay: 'turn' is ambiguous: FL_SELECTED, FL_TIMEOUT, FL_TURN_END"),
])
def test_a_timer_rule_that_cannot_be_evaluated_is_refused_where_it_is_written(old, new, mark, said):
    text, at = broken(old, new, mark)
    message = fails(text)
    assert message.startswith(f"messages.yaml:{at}: unit ") and said in message, message
