"""Conformance checks of SPEC 4.3: one typed reply per command, INPUT and its refusals, capabilities."""
from __future__ import annotations

from unohil.protocol import catalogue as cat, devtime, encode, msg

from unohil.harness.conform.registry import check
from unohil.harness.conform.wire import (ACTION, DISPOSITION, ERR, REPLY_OF, REPLY_TIMEOUT_US, SOURCE, changes_nothing,
                                  expect, expect_nak, show)


@check("4.3", "each command gets its typed reply, cmd_seq echoed")
def typed_replies(cs):
    w = cs.w
    k = cs.recipe
    cases = [msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR), msg.TIME_SYNC(t1_host_us=1),
             msg.CONFIG_GET(param=1), msg.CONFIG_SET(param=1, value=cs.boot_seed), msg.STATUS_GET(),
             msg.EVENT_RESEND(first_seq=0, count=0), msg.INJECT_CANCEL(), msg.RESET(mode=0)]
    if cs.has("host_input"):
        name, action, value = k["report"]
        cases.append(msg.INPUT(input=cs.input_id(name), action=ACTION[action], value=value))
    if cs.has("test_mode"):
        name, action, value = k["report"]
        cases.append(msg.INJECT(at_us=devtime.wrap(cs.w.last_dev_time() + 5_000_000), input=cs.input_id(name),
                                action=ACTION[action], value=value))
    for m in cases:
        if m.DEF.capability and not cs.has(m.DEF.capability):
            # a command the unit lacks is answered too: NAK unsupported, naming it (SPEC 4.3)
            w.nak(m, "unsupported", 0)
            continue
        want = REPLY_OF[m.NAME]
        r = w.command(m)
        expect(r.msg.NAME == want, f"{m.NAME} answered {show(r)}, expected {want}")
        if want == "ACK":
            expect(r.msg.cmd_type == m.ID, f"ACK of {m.NAME} names type {r.msg.cmd_type:#04x}")
    if cs.has("test_mode"):
        w.command(msg.INJECT_CANCEL(), expect="ACK")
    cs.new_game()


@check("4.3", "three commands in one write: three replies in order")
def batch(cs):
    w = cs.w
    seqs = [w.next_seq() for _ in range(3)]
    third = msg.TIME_SYNC(t1_host_us=7) if cs.has("time_sync") else msg.HELLO(host_major=cat.MAJOR,
                                                                             host_minor=cat.MINOR)
    cmds = [msg.STATUS_GET(), msg.CONFIG_GET(param=1), third]
    w.send_raw(b"".join(encode(m, s, 0) for m, s in zip(cmds, seqs)),
               {s: (m.NAME, m.ID) for m, s in zip(cmds, seqs)})
    rs = [w.reply(s) for s in seqs]
    expect(all(rs), "not every command of a three-command write was answered")
    idx = [w.frames.index(r) for r in rs]
    expect(idx == sorted(idx), "the replies to three commands in one write came out of order")
    expect([r.msg.NAME for r in rs] == [REPLY_OF[m.NAME] for m in cmds],
           f"replies {[show(r) for r in rs]}")


# the report situation is a release (of a paddle, a button): reported, acting on nothing (SD-9)
@check("4.3", "INPUT: ACK (value 0) before its INPUT_SEEN (source host)", needs=("host_input",), decisions=("SD-9",))
def input_ack_first(cs):
    w = cs.w
    name, action, value = cs.recipe["report"]
    n = len(w.frames)
    r = w.command(msg.INPUT(input=cs.input_id(name), action=ACTION[action], value=value), expect="ACK")
    expect(r.msg.value == 0, f"INPUT's ACK value {r.msg.value}, expected 0")
    seen = w.wait(lambda f: f.msg.NAME == "INPUT_SEEN" and f.msg.source == SOURCE["host"], REPLY_TIMEOUT_US, n)
    expect(seen is not None, "no INPUT_SEEN (source host) after an INPUT")
    expect(w.frames.index(seen) > w.frames.index(r), "INPUT_SEEN came before the INPUT's ACK")
    expect(seen.msg.input == cs.input_id(name) and seen.msg.action == ACTION[action],
           "INPUT_SEEN names another input or action")
    expect(seen.msg.disposition == DISPOSITION["reported"],
           f"INPUT {name} {action}: INPUT_SEEN disposition {seen.msg.disposition}, expected reported")
    expect(devtime.diff(r.time_us, seen.time_us) >= 0, "INPUT_SEEN is later than the ACK that came first")


@check("4.3", "INPUT of an unknown input or action: NAK bad_value, no INPUT_SEEN", needs=("host_input",))
def input_unknown(cs):
    w = cs.w
    n_inputs = len(cat.ENUM_VALUES[f"{cs.kind}_input"])
    with changes_nothing(w, "INPUTs of inputs or actions the unit does not have"):
        w.nak(msg.INPUT(input=0xEE, action=1, value=0), "bad_value", 0)
        w.nak(msg.INPUT(input=n_inputs, action=1, value=0), "bad_value", 0)
        w.nak(msg.INPUT(input=0, action=2, value=0), "bad_value", 0)


@check("4.3", "INPUT refused by the unit: NAK wrong_state (detail = state), then INPUT_SEEN refused",
       needs=("host_input",))
def input_refused(cs):
    _refusal(cs, cs.recipe["refused"], "wrong_state")


@check("4.3", "INPUT refused by the unit as bad_value: NAK bad_value, then INPUT_SEEN refused", needs=("host_input",),
       decisions=("SD-10",))
def input_refused_value(cs):
    refusals = [cs.recipe["refused_value"]] if cs.recipe["refused_value"] else []
    beyond = button_beyond(cs.kind, cs.ident.players)
    if beyond is not None:
        refusals.append([[beyond, "press", 0]])
    if not refusals:
        return ("n/a", f"no bad_value refusal in the {cs.kind} state table to provoke")
    for steps in refusals:
        _refusal(cs, steps, "bad_value")
    return f"checked: {'; '.join(' '.join(map(str, steps[-1])) for steps in refusals)}"


def button_beyond(kind: str, players: int) -> str | None:
    """The first Player button a unit with IDENTITY.players buttons lacks (SPEC 8.1: refused bad_value), if any."""
    roles = cat.UNITS[kind].roles
    if roles is None or players >= len(roles.buttons):
        return None
    return roles.buttons[players]


@check("4.3", "INPUT with a value on an input that takes none: NAK bad_value, nothing started (PR-3)",
       needs=("host_input",), decisions=("PR-3",))
def input_value_not_taken(cs):
    """The input that starts play (the last of the busy situation), sent with value 1."""
    *before, (name, action, _value) = cs.recipe["busy"]
    if name in cat.UNITS[cs.kind].valued_inputs:
        return ("n/a", f"{name} takes a value on the {cs.kind} unit")
    _refusal(cs, [*before, [name, action, 1]], "bad_value")


@check("4.3", "INPUT with a value on an input that takes none: bad_value before any state rule, in every state (PR-6)",
       needs=("host_input",), decisions=("PR-6",))
def value_before_state(cs):
    """Every input that takes no value, sent with value 1 in each state the situations reach (a fresh unit,
    then after each of their steps): NAK bad_value every time, never the state's wrong_state nor an ACK
    of an input the state only reports."""
    unit = cat.UNITS[cs.kind]
    plain = [name for name in cat.ENUM_VALUES[f"{cs.kind}_input"] if name not in unit.valued_inputs]
    recipe = cs.recipe
    paths = [recipe[key] for key in ("refused", "refused_value", "busy") if recipe[key]]
    states: list[int] = []
    for steps in paths:
        cs.new_game()
        for k in range(len(steps) + 1):
            if k:
                r = cs.apply(steps[k - 1:k])
                if r.msg.NAME != "ACK":
                    break                   # the path's own refusal: nothing past it to reach
            state = cs.w.status().state
            if state in states:
                continue
            states.append(state)
            for name in plain:
                for action in ("press", "release"):
                    m = msg.INPUT(input=cs.input_id(name), action=ACTION[action], value=1)
                    r = cs.w.command(m)
                    expect_nak(r, m.ID, r.msg.cmd_seq, "bad_value", 0,
                               f"INPUT {name} {action} 1 in state {state} (PR-6: bad_value before the state's rules)")
    cs.new_game()
    return f"checked {len(plain)} inputs x 2 actions in states {', '.join(map(str, states))}"


@check("4.3", "commands without their capability: NAK unsupported")
def unsupported(cs):
    needs = {"test_mode": [msg.INJECT(at_us=1, input=0, action=1, value=0), msg.INJECT_CANCEL()],
             "host_input": [msg.INPUT(input=0, action=1, value=0)], "time_sync": [msg.TIME_SYNC(t1_host_us=1)],
             "event_resend": [msg.EVENT_RESEND(first_seq=0, count=1)],
             "config_set": [msg.CONFIG_SET(param=1, value=1)],
             "rig_lines": [msg.RIG_WIRE(line=0, signal=0, id=0, target=0, polarity=0),      # no game unit has them
                           msg.RIG_EDGE(at_us=1, line=0, action=1)]}
    assert {m.NAME for ms in needs.values() for m in ms} == {m.name for m in cat.MESSAGES if m.capability}
    missing = [c for c in needs if not cs.has(c)]
    if not missing:
        return ("n/a", "the unit has every capability")
    with changes_nothing(cs.w, "commands refused as unsupported"):
        for cap in missing:
            for m in needs[cap]:
                cs.w.nak(m, "unsupported", 0)
    return f"checked: {', '.join(missing)}"


def _refusal(cs, steps, error: str):
    w = cs.w
    cs.new_game()
    if len(steps) > 1:
        expect(cs.apply(steps[:-1]).msg.NAME == "ACK", f"INPUT {' '.join(map(str, steps[-2]))} (preparing)")
    n = len(w.frames)
    last = cs.input_id(steps[-1][0])

    def owed(f):
        return (f.msg.NAME == "INPUT_SEEN" and f.msg.input == last and f.msg.source == SOURCE["host"]
                and f.msg.disposition == DISPOSITION["refused"])
    # the refused INPUT is reported (INPUT_SEEN refused), and does nothing else
    what = f"INPUT {' '.join(map(str, steps[-1]))}"
    with changes_nothing(w, f"INPUTs refused as {error}", owed):
        r = cs.apply(steps[-1:])
        expect_nak(r, msg.INPUT.ID, r.msg.cmd_seq, error, None, what)
    state = w.status().state
    expect_nak(r, msg.INPUT.ID, r.msg.cmd_seq, error, state if error == "wrong_state" else 0, what)
    seen = w.wait(owed, REPLY_TIMEOUT_US, n)
    expect(seen is not None, "no INPUT_SEEN (refused) after the NAK")
    expect(w.frames.index(seen) > w.frames.index(r), "the refused INPUT_SEEN came before the NAK")
    expect(seen.msg.detail == ERR[error], f"INPUT_SEEN.detail {seen.msg.detail}, expected {ERR[error]} ({error})")
    cs.new_game()
