"""Conformance checks of SPEC 4.7: configuration parameters, their ranges, defaults and rules."""
from __future__ import annotations

from unohil.protocol import catalogue as cat, msg

from unohil.harness.conform.recipes import cross_rules_ok
from unohil.harness.conform.registry import check
from unohil.harness.conform.wire import expect, show, ERR


@check("4.7", "CONFIG_GET of every parameter: its default after a boot")
def config_defaults(cs):
    w = cs.w
    bad = []
    for p in cs.params():
        r = w.command(msg.CONFIG_GET(param=p.id), expect="CONFIG_VALUE")
        want = cs.boot_seed if p.name == "rng_seed" else p.default
        expect(r.msg.param == p.id, f"CONFIG_VALUE for {p.name} names param {r.msg.param:#04x}")
        if r.msg.value != want:
            bad.append(f"{p.name} = {r.msg.value}, default {want}")
    expect(not bad, "; ".join(bad))


@check("4.7", "CONFIG_SET at min and max accepted (or bad_value by a cross rule), outside: bad_value",
       needs=("config_set",))
def config_ranges(cs):
    w = cs.w
    config = {p.name: (cs.boot_seed if p.name == "rng_seed" else p.default) for p in cs.params()}
    problems = []
    for p in cs.params():
        tries = [(p.min, True), (p.max, True)]
        if p.min > 0:
            tries.append((p.min - 1, False))
        if p.max < 0xFFFFFFFF:
            tries.append((p.max + 1, False))
        for value, in_range in tries:
            ok = in_range and cross_rules_ok(cs.kind, dict(config, **{p.name: value}))
            r = w.command(msg.CONFIG_SET(param=p.id, value=value))
            if ok:
                if r.msg.NAME != "CONFIG_VALUE" or r.msg.value != value:
                    problems.append(f"{p.name} = {value}: {show(r)}, expected CONFIG_VALUE {value}")
            elif not (r.msg.NAME == "NAK" and r.msg.error == ERR["bad_value"]):
                problems.append(f"{p.name} = {value}: {show(r)}, expected NAK bad_value")
            else:
                kept = w.command(msg.CONFIG_GET(param=p.id), expect="CONFIG_VALUE").msg.value
                if kept != config[p.name]:
                    problems.append(f"{p.name} = {value} refused, yet {p.name} is now {kept}")
            back = w.command(msg.CONFIG_SET(param=p.id, value=config[p.name]))
            if back.msg.NAME != "CONFIG_VALUE":
                problems.append(f"{p.name} back to {config[p.name]}: {show(back)}")
    expect(not problems, "; ".join(problems[:6]) + (f" (+{len(problems) - 6} more)" if len(problems) > 6 else ""))
    return f"{len(cs.params())} parameters"


@check("4.7", "unknown parameter and another kind's parameter: NAK unknown_param")
def config_unknown(cs):
    w = cs.w
    mine = {p.id for p in cs.params()}
    foreign = next((p for p in cat.PARAMS if p.id not in mine), None)
    before = _values(cs)
    for pid in (0xEE, foreign.id if foreign else 0xEF):
        w.nak(msg.CONFIG_GET(param=pid), "unknown_param", 0)
        # without config_set, unsupported comes first (SPEC 4.3), whatever the parameter
        w.nak(msg.CONFIG_SET(param=pid, value=0xFFFFFFFF), "unknown_param" if cs.has("config_set") else "unsupported", 0)
    after = _values(cs)
    changed = [name for name in before if after[name] != before[name]]
    for name in changed:                # put back, so that the checks after this one find the unit as it was
        w.command(msg.CONFIG_SET(param=cat.PARAMS_BY_NAME[name].id, value=before[name]))
    expect(not changed, "CONFIG_SETs of unknown parameters, refused, changed "
                        + ", ".join(f"{name} {before[name]} -> {after[name]}" for name in changed))


def _values(cs) -> dict[str, int]:
    return {p.name: cs.w.command(msg.CONFIG_GET(param=p.id), expect="CONFIG_VALUE").msg.value for p in cs.params()}


@check("4.7", "CONFIG_SET outside the idle states: NAK wrong_state, detail = state, before bad_value",
       needs=("config_set", "host_input"))
def config_busy(cs):
    w = cs.w
    cs.new_game()
    for name, value in cs.recipe["busy_config"].items():
        w.command(msg.CONFIG_SET(param=cat.PARAMS_BY_NAME[name].id, value=value), expect="CONFIG_VALUE")
    p = next(p for p in cs.params() if p.name != "rng_seed")
    was = w.command(msg.CONFIG_GET(param=p.id), expect="CONFIG_VALUE").msg.value
    try:
        r = cs.apply(cs.recipe["busy"])
        expect(r.msg.NAME == "ACK", f"the last input to leave the idle states answered {show(r)}")
        state = w.status().state
        w.command(msg.CONFIG_GET(param=p.id), expect="CONFIG_VALUE")       # reading is always allowed
        other = p.min if was != p.min else p.max
        w.nak(msg.CONFIG_SET(param=p.id, value=other), "wrong_state", state)
        if p.max < 0xFFFFFFFF:
            w.nak(msg.CONFIG_SET(param=p.id, value=p.max + 1), "wrong_state", state)   # precedence
        now = w.command(msg.CONFIG_GET(param=p.id), expect="CONFIG_VALUE").msg.value
        expect(now == was, f"CONFIG_SETs refused as wrong_state changed {p.name}: {was} -> {now}")
    finally:
        cs.new_game()
        w.command(msg.CONFIG_SET(param=p.id, value=was))
        for name in cs.recipe["busy_config"]:
            prm = cat.PARAMS_BY_NAME[name]
            w.command(msg.CONFIG_SET(param=prm.id, value=prm.default))


@check("4.7", "rng_seed set is reported in IDENTITY.seed; configuration survives RESET new_game",
       needs=("config_set",))
def config_seed(cs):
    w = cs.w
    seed = 0x0BADCAFE
    w.command(msg.CONFIG_SET(param=1, value=seed), expect="CONFIG_VALUE")
    ident = w.command(msg.HELLO(host_major=cat.MAJOR, host_minor=cat.MINOR), expect="IDENTITY").msg
    expect(ident.seed == seed, f"IDENTITY.seed {ident.seed} after setting rng_seed {seed}")
    cs.new_game()
    r = w.command(msg.CONFIG_GET(param=1), expect="CONFIG_VALUE")
    expect(r.msg.value == seed, f"rng_seed {r.msg.value} after RESET new_game, expected {seed} (kept)")
    w.command(msg.CONFIG_SET(param=1, value=cs.boot_seed), expect="CONFIG_VALUE")
