"""The catalogue's unit facts (messages.yaml `units`): consistent with the messages, params and enums."""
from __future__ import annotations

import pytest

from unohil.protocol import catalogue as cat
from unohil.protocol.catalogue import UNITS, CrossRule

# the game units: every kind of the enum but the rig's, which has a section of its own (SPEC 13)
KINDS = [k for k in cat.ENUM_VALUES["unit_kind"] if k != cat.RIG.kind]


def _messages_of(kind: str) -> list[cat.MessageDef]:
    return [m for m in cat.MESSAGES if m.kind != "event" or kind in m.units]


def test_one_unit_per_kind_in_enum_order():
    assert list(UNITS) == KINDS
    assert all(u.kind == k for k, u in UNITS.items())


@pytest.mark.parametrize("kind", KINDS)
def test_anchors_and_verdict_are_events_of_the_unit(kind):
    u = UNITS[kind]
    assert u.anchors and set(u.anchors.values()) <= u.events
    assert u.verdict in u.events
    assert u.outcome_field in {f.name for f in cat.BY_NAME[u.verdict].fields}


@pytest.mark.parametrize("kind", KINDS)
def test_time_fields_are_u32_fields_of_the_units_events(kind):
    u32 = {f.name for m in cat.MESSAGES if m.name in UNITS[kind].events for f in m.fields if f.type == "u32"}
    assert UNITS[kind].time_fields and UNITS[kind].time_fields <= u32


@pytest.mark.parametrize("kind", KINDS)
def test_cross_rules_name_params_of_the_unit_and_hold_for_the_defaults(kind):
    u = UNITS[kind]
    names = {p.name for p in u.params}
    defaults = {p.name: p.default for p in u.params}
    for rule in u.cross_rules:
        assert set(rule.params) <= names, rule.text
        assert rule.holds(defaults), rule.text


def test_cross_rule_chains_and_strictness():
    rule = CrossRule.parse("a <= b < c")
    assert rule.params == ("a", "b", "c")
    assert rule.holds({"a": 1, "b": 1, "c": 2})
    assert not rule.holds({"a": 1, "b": 2, "c": 2})
    assert not rule.holds({"a": 2, "b": 1, "c": 3})
    for bad in ("a", "a <", "a == b", "a < b <"):
        with pytest.raises(ValueError):
            CrossRule.parse(bad)


def test_cross_rules_are_spec_4_7():
    assert [r.text for r in UNITS["showdown"].cross_rules] == ["countdown_min_us <= countdown_max_us",
                                                                 "tie_window_us < flight_us"]
    assert [r.text for r in UNITS["launcher"].cross_rules] == ["burst_min <= burst_mode <= burst_max"]
    assert UNITS["flash"].cross_rules == ()


@pytest.mark.parametrize("kind", KINDS)
def test_situations_name_real_inputs_actions_and_params(kind):
    u = UNITS[kind]
    params = {p.name: p for p in u.params}
    assert set(u.situations) == {"report", "stimulus", "refused", "refused_value", "busy_config", "busy",
                                 "reset_busy"}
    assert set(u.situations["reset_busy"]) <= u.events

    def triple(t):
        assert isinstance(t, tuple) and len(t) == 3, t
        inp, action, value = t
        assert inp in u.inputs and action in cat.ENUM_VALUES["action"] and 0 <= value <= 0xFF, t

    triple(u.situations["report"])
    triple(u.situations["stimulus"])
    for key in ("refused", "refused_value", "busy"):
        seq = u.situations[key]
        assert seq is None or (isinstance(seq, list) and seq), key
        for t in seq or ():
            triple(t)
    for name, value in u.situations["busy_config"].items():
        assert params[name].min <= value <= params[name].max


@pytest.mark.parametrize("kind", KINDS)
def test_states_capabilities_and_enums_exist(kind):
    u = UNITS[kind]
    assert u.power_on_state in cat.ENUM_VALUES[f"{kind}_state"]
    assert set(u.capabilities) <= set(cat.ENUM_VALUES["capability"])
    assert ("landing_sensor" in u.capabilities) == (kind == "showdown")
    assert f"{kind}_input" in u.enums and f"{kind}_state" in u.enums
    for (message, field), enum in u.field_enums.items():
        assert message in {m.name for m in _messages_of(kind)}
        assert field in {f.name for f in cat.BY_NAME[message].fields}
        assert enum in cat.ENUM_VALUES or enum == "param"


def test_each_enum_belongs_to_at_most_one_unit():
    owned = [e for u in UNITS.values() for e in u.enums]
    assert len(owned) == len(set(owned))


def test_unit_facts_are_outside_the_catalogue_crc():
    canonical = cat._canonical()
    assert b"countdown_start" not in canonical and b"Showdown unit" not in canonical



def test_the_units_that_hold_cards_name_their_capacity():
    """SD-10's tray and LA-14's magazine: the catalogue's fact the emulator and the C library take."""
    assert {k: u.card_capacity for k, u in cat.UNITS.items()} == {"showdown": 12, "flash": 0, "launcher": 98}
