"""Conformance checks of SPEC 4.9: RESET and BOOT (the reboots that open and close the run, RESET modes)."""
from __future__ import annotations

from unohil.protocol import catalogue as cat, devtime, msg

from unohil.harness.conform.recipes import POWER_ON, cross_rules_ok
from unohil.harness.conform.registry import END, START, check
from unohil.harness.conform.wire import QUIET_US, changes_nothing, expect, show, ACTION, REPLY_TIMEOUT_US


@check("4.9", "RESET reboot: ACK, then BOOT(event_seq 0, header seq 0, reset_command), new boot_id", phase=START)
def reboot(cs):
    w = cs.w
    old = cs.ident.boot_id
    seq = w.send(msg.RESET(mode=1))
    n = len(w.frames)
    r = w.reply(seq)
    expect(r is not None, "no reply to RESET reboot")
    expect(r.msg.NAME == "ACK" and r.msg.value == 0, f"RESET reboot answered {show(r)}, expected ACK 0")
    boot = w.wait(lambda f: f.msg.NAME == "BOOT", 3 * REPLY_TIMEOUT_US, n)
    expect(boot is not None, "no BOOT event after RESET reboot")
    # later checks compare against this boot, whatever this one finds wrong with it
    ident = w.command(msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR), expect="IDENTITY").msg
    cs.ident, cs.boot_seed = ident, ident.seed
    if not w.origin:
        w.origin, w.origin_errors = w.frames.index(boot), len(w.stream_errors)
    expect(w.frames.index(boot) > w.frames.index(r), "BOOT came before the ACK of RESET reboot")
    expect(boot.seq == 0 and boot.msg.event_seq == 0,
           f"BOOT has header seq {boot.seq} and event_seq {boot.msg.event_seq}, expected 0 and 0")
    expect(boot.msg.reason == cat.ENUM_VALUES["boot_reason"]["reset_command"],
           f"BOOT reason {boot.msg.reason}, expected reset_command (1)")
    expect(boot.msg.boot_id not in (0, old), f"boot_id {boot.msg.boot_id:#010x} after the reboot "
                                              f"(before {old:#010x}): must be new and non-zero")
    expect(ident.boot_id == boot.msg.boot_id, "IDENTITY.boot_id differs from the BOOT event's")


@check("4.9", "RESET of an unknown mode: NAK bad_value")
def reset_bad_mode(cs):
    with changes_nothing(cs.w, "RESETs refused as bad_value"):
        cs.w.nak(msg.RESET(mode=7), "bad_value", 0)


@check("4.9", "RESET new_game: ACK, then STATE(power-on state, previous); stimuli kept")
def reset_new_game(cs):
    w = cs.w
    far = devtime.wrap(w.last_dev_time() + 600_000_000)
    name, action, value = cs.recipe["report"]
    if cs.has("test_mode"):
        w.command(msg.INJECT(at_us=far, input=cs.input_id(name), action=ACTION[action], value=value),
                  expect="ACK")
    st0 = w.status()
    n = len(w.frames)
    r = w.command(msg.RESET(mode=0), expect="ACK")
    expect(r.msg.value == 0, f"RESET's ACK value {r.msg.value}")
    state = w.wait(lambda f: f.msg.NAME == "STATE", REPLY_TIMEOUT_US, n)
    expect(state is not None, "no STATE event after RESET new_game")
    expect(w.frames.index(state) > w.frames.index(r), "STATE came before the ACK of RESET new_game")
    want = cs.state_id(POWER_ON[cs.kind])
    expect(state.msg.state == want and state.msg.previous == st0.state,
           f"STATE({state.msg.state}, previous {state.msg.previous}), expected STATE({want}, previous {st0.state})")
    st = w.command(msg.STATUS_GET(), expect="STATUS").msg
    expect(st.boot_id == cs.ident.boot_id, "RESET new_game changed the boot id")
    if cs.has("test_mode"):
        expect(st.pending_injects == 1, f"RESET new_game left {st.pending_injects} stimuli pending, expected 1")
        w.command(msg.INJECT_CANCEL(), expect="ACK")


@check("4.9", "RESET new_game in play: the SPEC's closing events in order, then STATE; no verdict after it",
       decisions=("SD-15", "LA-13", "PR-5"), needs=("host_input",))
def reset_in_play(cs):
    """SPEC 4.9 and PR-5: what was running is closed (the burst's LA_RESULT, the tray's SD_CARDS 0),
    lights go off, STATE says power-on; an abandoned race or turn gets no verdict, now or later."""
    w = cs.w
    busy_config = cs.recipe["busy_config"]
    if busy_config and not cs.has("config_set"):
        return "skip", f"play is started with {', '.join(busy_config)} set, which needs capability config_set"
    cs.new_game()
    for name, value in busy_config.items():
        w.command(msg.CONFIG_SET(param=cat.PARAMS_BY_NAME[name].id, value=value), expect="CONFIG_VALUE")
    try:
        # the RESET follows the input that started play at once, while its timers still run
        r = cs.apply(cs.recipe["busy"])
        expect(r.msg.NAME == "ACK", f"the last input to leave the idle states answered {show(r)}")
        # what the RESET caused comes after its ACK (SPEC 4.3); the events of the input before it
        # come before the ACK on the wire, whichever read brings them
        ack = w.command(msg.RESET(mode=0), expect="ACK")
        n = w.frames.index(ack) + 1
        state = w.wait(lambda f: f.msg.NAME == "STATE", REPLY_TIMEOUT_US, n)
        expect(state is not None, "no STATE event after RESET new_game")
        # as long as the abandoned play could have taken to its verdict (the unit's own bound, SPEC 7-9)
        verdict = cat.UNITS[cs.kind].verdict
        later = w.quiet(cat.UNITS[cs.kind].latest_us(verdict, busy_config) + QUIET_US)
        events = [f.msg.NAME for f in w.frames[n:] if f.msg.KIND == "event"]
        closing = [e for e in events[:events.index("STATE")] if e not in ("LIGHT", "SOUND")]
        expect(closing == list(cs.recipe["reset_busy"]),
               f"RESET new_game in play emitted {closing or 'nothing'} before STATE, expected "
               f"{list(cs.recipe['reset_busy']) or 'nothing'} (SPEC 4.9)")
        expect(verdict not in [f.msg.NAME for f in later], f"{verdict} after RESET new_game: an abandoned "
                                                            f"{'burst' if cs.kind == 'launcher' else 'race'} "
                                                            f"gets no verdict but the one that closes it")
        if "SD_CARDS" in closing:
            cards = next(f for f in w.frames[n:] if f.msg.NAME == "SD_CARDS").msg.cards
            expect(cards == 0, f"SD_CARDS({cards}) after RESET new_game, expected 0")
    finally:
        cs.new_game()
        for name in busy_config:
            prm = cat.PARAMS_BY_NAME[name]
            w.command(msg.CONFIG_SET(param=prm.id, value=prm.default))


@check("4.9", "RESET reboot at the end: drops pending stimuli, restores defaults, stimulus id 1", phase=END)
def reboot_restores(cs):
    w = cs.w
    if cs.has("config_set"):
        p = next(p for p in cs.params() if p.name != "rng_seed")
        value = p.max if cross_rules_ok(cs.kind, {q.name: q.default for q in cs.params()} | {p.name: p.max}) \
            else p.min
        w.command(msg.CONFIG_SET(param=p.id, value=value), expect="CONFIG_VALUE")
    if cs.has("test_mode"):
        name, action, value = cs.recipe["report"]
        w.command(msg.INJECT(at_us=devtime.wrap(w.last_dev_time() + 600_000_000), input=cs.input_id(name),
                             action=ACTION[action], value=value), expect="ACK")
    reboot(cs)
    st = w.command(msg.STATUS_GET(), expect="STATUS").msg
    expect(st.pending_injects == 0, f"{st.pending_injects} stimuli survived RESET reboot")
    if cs.has("config_set"):
        r = w.command(msg.CONFIG_GET(param=p.id), expect="CONFIG_VALUE")
        expect(r.msg.value == p.default, f"{p.name} = {r.msg.value} after RESET reboot, default {p.default}")
    if cs.has("test_mode"):
        name, action, value = cs.recipe["report"]
        r = w.command(msg.INJECT(at_us=devtime.wrap(w.last_dev_time() + 600_000_000), input=cs.input_id(name),
                                 action=ACTION[action], value=value), expect="ACK")
        expect(r.msg.value == 1, f"first stimulus id after a reboot is {r.msg.value}, expected 1")
        w.command(msg.INJECT_CANCEL(), expect="ACK")
