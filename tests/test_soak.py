"""Long runs on the virtual clock, with faults on: hours of device time, the u32 wrap crossed,
tens of thousands of races per unit kind, every verdict checked exactly.

Each race goes through the driver, the codec and a faulty line to the emulator. The host
predicts every verdict before it comes: the stimuli are its own, and the unit's draws
(countdowns, the line, the launcher's fire and burst draws, the Flash's selections) are
mirrored with the reference algorithms of protocol/algorithms.py from the seed the host set.
A verdict that differs from the prediction is a wrong verdict; a verdict that never comes
is a lost one. Neither may happen. A race cut short by the link (a command whose reply and
effect are both lost) is counted and must stay rare; a reboot (a reset fault) is followed
by a new session.

Memory: the driver's and the unit's buffers are bounded; the test checks their sizes
and that the number of live objects does not grow once the driver's history is full.

`pytest -s tests/test_soak.py` prints each kind's figures.
"""
import gc
import random
import resource
import time

import pytest

from unohil.harness import Driver
from unohil.harness.errors import DeviceReset, LinkError, Nak, WaitTimeout
from unohil.protocol import catalogue as cat
from unohil.protocol.devtime import WRAP
from unohil.protocol.algorithms import Pcg32, countdown, fire_chance, fires, lands_on_b, pick, sample_burst

BOOT_US = WRAP - 60_000_000         # the counter starts a minute before the u32 wrap
LEAD_US = 3_000_000                 # stimuli go out this far ahead: a lost ACK and the STATUS after it fit
FAULTS = ("corrupt=1e-4,drop=5e-5,dropframe=2e-4,dup=2e-4,garbage=1e-4,delay=20us..300us,stall=2e-5:100ms,"
          "reset=5e-7,in.corrupt=5e-5,in.dropframe=1e-4")
HOURS = 3 * 3600 * 1_000_000

SIDE = cat.ENUM_VALUES["side"]
SD_REASON = cat.ENUM_VALUES["showdown_reason"]
FL_REASON = cat.ENUM_VALUES["flash_buzzer_reason"]
NONE_I32 = cat.NONE_I32

# part of every run; -m "not slow" leaves it out. Under -n the whole file goes to one worker
# (tests/conftest.py), so the totals reuse the soaks the kinds' tests ran there.
pytestmark = pytest.mark.slow


class Soak:
    kind = ""

    def __init__(self, races: int, seed: int, frames_per_race: int):
        self.races = races
        self.rng = random.Random(seed)                 # the host's choices (reactions, race types)
        self.game_seed = seed * 1000 + 1
        # one reboot by fault mid-run, besides the rare random ones
        url = (f"emu://{self.kind}?seed={seed}&boot_time_us={BOOT_US}&faults={FAULTS},seed={seed},"
               f"reset_after={races * frames_per_race // 2}")
        self.d = Driver.open(url)
        self.done = 0
        self.wrong: list[str] = []
        self.lost_verdicts = 0
        self.cut_short = 0
        self.resets = 0
        self.spans: list[list[int]] = []               # [first, last] unwrapped device time of each boot
        self.objects: list[int] = []

    # ---- the loop ----
    def run(self) -> dict:
        t0 = time.perf_counter()
        checkpoint = max(2000, self.races // 10)
        fresh, reconnect, reboot, failures = True, False, False, 0
        while self.done < self.races:
            try:
                if reconnect:
                    self.d.reconnect()
                    reconnect = False
                if reboot:
                    self.d.reboot()                   # back at power-on: the mirror starts over
                    reboot = False
                if fresh:
                    self._session()
                    fresh = False
                self.race()
                self.done += 1
                failures = 0
            except DeviceReset:
                self.resets += 1
                fresh = reconnect = True
                failures += 1
            except (LinkError, Nak) as exc:
                if isinstance(exc, Nak) and exc.error != "too_late":
                    raise
                # too_late: lost replies delayed an INJECT past its time (the link was too slow for
                # the schedule, as the runner says of a scenario), a race cut short by the link
                if isinstance(exc, WaitTimeout) and "verdict" in str(exc):
                    self.lost_verdicts += 1
                self.cut_short += 1
                fresh = reboot = True
                failures += 1
            assert failures < 20, "the unit cannot be reached any more"
            if self.done and self.done % checkpoint == 0 and len(self.objects) < self.done // checkpoint:
                gc.collect()
                self.objects.append(len(gc.get_objects()))
        self.d.confirm_events()
        return self._figures(time.perf_counter() - t0)

    def _session(self) -> None:
        d = self.d
        d.config_set("rng_seed", self.game_seed)
        self.m = Pcg32(self.game_seed)            # the unit's draws: SPEC 6.0's reference generator
        self.now = d.last_reply_dev_us
        self.spans.append([self.now, self.now])
        self.configure()
        self.seen(d.last_reply_dev_us)        # configuring took device time too (a lost reply: a second)

    def seen(self, dev_us: int) -> None:
        # last_reply_dev_us too: a wait that had to ask STATUS for a lost last event took time
        self.now = max(self.now, dev_us, self.d.last_reply_dev_us)
        self.spans[-1][1] = self.now

    def check(self, what: str, got, want) -> None:
        if got != want and len(self.wrong) < 20:
            self.wrong.append(f"race {self.done}: {what}: got {got}, expected {want}")
        elif got != want:
            self.wrong.append("...")

    def wait(self, name: str, what: str, collect=None):
        return self.d.wait_for(lambda f: f.msg.NAME == name, 30_000_000, what, collect=collect)

    # ---- figures ----
    def _figures(self, wall_s: float) -> dict:
        d, link = self.d, self.d.link
        dev = link.device
        device_us = sum(b - a for a, b in self.spans)
        wraps = sum(b // WRAP - a // WRAP for a, b in self.spans)
        bounded = {
            "driver inbox": len(d.inbox), "driver pending commands": len(d._pending),
            "driver held events": len(d.events.held), "driver stimuli tracked": len(d._injected),
            "driver history": len(d.history), "decoder bytes": d.decoder.pending,
            "unit event ring": len(dev._ring), "unit stimuli": len(dev._injects),
            "unit timers": len(dev._timers), "clock queue": len(link.clock._heap),
            "line bytes held": link.faults.line.held_bytes,
        }
        return {"kind": self.kind, "races": self.done, "wall_s": round(wall_s, 1),
                "races_per_s": round(self.done / wall_s), "device_hours": round(device_us / 3.6e9, 2),
                "wraps": wraps, "boots": len(self.spans), "resets": self.resets, "cut_short": self.cut_short,
                "lost_verdicts": self.lost_verdicts, "wrong": self.wrong, "health": d.health.as_dict(),
                "faults": dict(link.faults.stats), "bounded": bounded, "objects": self.objects,
                "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


class ShowdownSoak(Soak):
    """First presses, ties settled by the line, false starts; random countdowns."""

    kind = "showdown"
    W = 1000

    def configure(self):
        d = self.d
        d.config_set("countdown_min_us", 500_000)
        d.config_set("countdown_max_us", 1_500_000)
        d.config_set("beep_interval_us", 2_000_000)
        if not hasattr(self, "tie_losers"):
            self.tie_losers = {"a": 0, "b": 0}
            self.cards_on_b = [0, 0]         # of ties with d != 0: cards on B, expected cards on B (x W)

    def race(self):
        d, m, rng, W = self.d, self.m, self.rng, self.W
        t = self.now + LEAD_US
        g = t + 1 + countdown(m, 500_000, 1_500_000)          # the unit draws it at the TIMER press
        x = rng.random()
        if x < 0.1:                                          # a false start
            early = rng.randrange(2)
            ra = g - rng.randrange(1, 400_000)
            rb = g + rng.randrange(100_000, 400_000)
            if early:
                ra, rb = rb, ra
            want = (early, SD_REASON["false_start"])
        elif x < 0.3:                                        # a tie: the line decides
            ra = g + rng.randrange(100_000, 400_000)
            delta = 0 if x < 0.17 else rng.randrange(-W + 1, W)
            rb = ra + delta
            on_b = sum(lands_on_b(m, delta, W) for _ in range(3))
            loser = SIDE["a"] if 3 - on_b > on_b else SIDE["b"]
            want = (loser, SD_REASON["line_tiebreak"])
            if delta == 0:
                self.tie_losers["a" if loser == SIDE["a"] else "b"] += 1
            else:
                self.cards_on_b[0] += on_b * W
                self.cards_on_b[1] += 3 * max(0, min(2 * W, W + 2 * delta)) // 2
        else:                                                # a clean first press
            ra = g + rng.randrange(0, 400_000)
            rb = ra + rng.randrange(W + 1, 200_000)
            if rng.randrange(2):
                ra, rb = rb, ra
            want = (SIDE["b"] if ra < rb else SIDE["a"], SD_REASON["first_press"])
        d.inject(t, "load_cards", value=3)
        d.inject(t + 1, "timer")
        d.inject(ra, "paddle_a")
        d.inject(rb, "paddle_b")
        v = self.wait("SD_VERDICT", "SD_VERDICT (the verdict)")
        self.check("loser, reason", (v.msg.loser, v.msg.reason), want)
        first = min(ra, rb)
        if want[1] == SD_REASON["first_press"]:
            self.check("reaction of the first", v.msg.reaction_a_us if ra < rb else v.msg.reaction_b_us, first - g)
            self.check("verdict time", v.dev_us, first + W)
        self.seen(max(v.dev_us, ra, rb))
        d.wait_until(self.now)


class LauncherSoak(Soak):
    """Presses of a magazine refilled as it runs low: fire draws, bursts, card timing."""

    kind = "launcher"

    def configure(self):
        self.inside = 0
        self.streak = 0
        if not hasattr(self, "bursts"):
            self.bursts: list[int] = []
            self.chance_sum = 0
            self.fired_presses = 0

    def reload(self):
        d = self.d
        t = self.now + LEAD_US
        d.inject(t, "door", "press")
        d.inject(t + 1000, "load_cards", value=60 - self.inside)
        d.inject(t + 2000, "door", "release")
        f = self.d.wait_for(lambda f: f.msg.NAME == "LA_DOOR" and f.msg.open == 0, 30_000_000, "the door closing")
        self.check("cards inside after loading", f.msg.inside, 60)
        self.inside, self.streak = 60, 0
        self.seen(f.dev_us)

    def race(self):
        if self.inside < 12:
            self.reload()
        d, m = self.d, self.m
        t = self.now + LEAD_US
        chance = fire_chance(250, 150, self.streak)
        fire = fires(m, chance)
        planned = sample_burst(m, 1, 4, 12) if fire else 0
        count = min(planned, self.inside)
        d.inject(t, "button")
        events: list = []
        v = self.wait("LA_RESULT", "LA_RESULT (the verdict)", collect=events)
        cards = sum(1 for f in events if f.msg.NAME == "LA_CARD")
        self.check("planned, fired, inside, cards out", (v.msg.planned, v.msg.fired, v.msg.inside, cards),
                   (planned, count, self.inside - count, count))
        self.check("knowable", v.dev_us, t + 150_000 + (count - 1) * 40_000 if fire else t)
        self.chance_sum += chance
        if fire:
            self.fired_presses += 1
            self.bursts.append(planned)
        self.inside -= count
        self.streak = 0 if fire else min(255, self.streak + 1)
        self.seen(v.dev_us)


class FlashSoak(Soak):
    """Buzzer races between three players, the slowest's press selecting the next player."""

    kind = "flash"
    PLAYERS = (0, 1, 2)

    def configure(self):
        d = self.d
        t = self.now + LEAD_US
        for i, p in enumerate(self.PLAYERS):
            d.inject(t + 1000 * i, f"player_{p}")
        d.inject(t + 5000, "play_pause")
        d.inject(t + 15_000, "play_pause", "release")
        self.current = pick(self.m, list(self.PLAYERS))
        f = self.wait("FL_SELECTED", "FL_SELECTED (the first player)")
        self.check("first player", f.msg.player, self.current)
        self.selected = getattr(self, "selected", {p: 0 for p in self.PLAYERS})
        self.ties = getattr(self, "ties", 0)
        self.seen(f.dev_us)

    def race(self):
        d, m, rng = self.d, self.m, self.rng
        t = self.now + LEAD_US
        opp = [p for p in self.PLAYERS if p != self.current]
        r = [rng.randrange(100_000, 900_000) for _ in opp]
        if rng.random() < 0.15:
            r[1] = r[0] + rng.randrange(-999, 1000)
            self.ties += 1
        d.inject(t, "buzzer")
        d.inject(t + 20_000, "buzzer", "release")
        for p, rp in zip(opp, r):
            d.inject(t + rp, f"player_{p}")
        last = max(r)
        tied = [p for p, rp in zip(opp, r) if last - rp < 1000]
        slowest = min(p for p, rp in zip(opp, r) if rp == last)
        reason = FL_REASON["slowest"] if len(tied) == 1 else FL_REASON["slowest_tie"]
        v = self.wait("FL_BUZZER_VERDICT", "FL_BUZZER_VERDICT (the verdict)")
        self.check("slowest, reason, tied", (v.msg.slowest, v.msg.reason, v.msg.tied_mask),
                   (slowest, reason, sum(1 << p for p in tied)))
        self.check("reactions", [v.msg.reaction_us[p] for p in opp], r)
        self.check("verdict time", v.dev_us, t + last)
        self.seen(v.dev_us)
        d.inject(self.now + LEAD_US, f"player_{v.msg.slowest}")
        nxt = pick(m, list(self.PLAYERS))
        f = self.wait("FL_SELECTED", "FL_SELECTED (the next player)")
        self.check("next player", f.msg.player, nxt)
        self.current = f.msg.player
        self.selected[nxt] += 1
        self.seen(f.dev_us)


#: kind -> (soak, races, seed, frames per race)
SOAKS = {"showdown": (ShowdownSoak, 45_000, 1, 25), "launcher": (LauncherSoak, 40_000, 2, 12),
         "flash": (FlashSoak, 15_000, 3, 30)}
_DONE: dict[str, tuple] = {}            # a soak is deterministic: run once per process, read by every test


def soak(kind: str) -> tuple:
    """The soak of one kind and its figures, run now unless this process already ran it."""
    if kind not in _DONE:
        _DONE[kind] = _run(*SOAKS[kind])
    return _DONE[kind]


def _run(cls, races, seed, frames_per_race):
    s = cls(races, seed, frames_per_race)
    try:
        fig = s.run()
    finally:
        s.d.close()
    print(f"\nsoak {fig['kind']}: {fig['races']} races in {fig['wall_s']} s ({fig['races_per_s']}/s), "
          f"{fig['device_hours']} device hours, {fig['wraps']} wraps, {fig['boots']} boots, "
          f"resets {fig['resets']}, cut short {fig['cut_short']}, lost verdicts {fig['lost_verdicts']}, "
          f"wrong {len(fig['wrong'])}\n  health {fig['health']}\n  faults {fig['faults']}\n"
          f"  buffers {fig['bounded']}\n  live objects at checkpoints {fig['objects']}, max RSS {fig['maxrss_mb']} MB")
    return s, fig


def common_checks(s, fig, races):
    assert fig["races"] == races
    assert fig["wrong"] == [], fig["wrong"]
    assert fig["lost_verdicts"] == 0
    h = fig["health"]
    assert h["events_lost"] == 0, "a gap the resend buffer should have filled was not"
    assert h["gaps_detected"] > 100 and h["events_recovered"] >= h["gaps_detected"]
    assert h["crc_errors"] > 100 and h["duplicates"] > 30 and h["naks_unattributed"] > 10
    assert fig["resets"] >= 1 and h["resets"] >= fig["resets"]
    assert fig["cut_short"] <= races // 1000
    assert fig["device_hours"] >= 3 and fig["wraps"] >= 2
    b = fig["bounded"]
    assert b["driver inbox"] <= 64 and b["driver pending commands"] == 0 and b["driver held events"] == 0
    assert b["driver stimuli tracked"] <= 2 * cat.INJECT_QUEUE + 1 and b["decoder bytes"] <= 63
    assert b["unit event ring"] <= cat.EVENT_BUFFER and b["unit stimuli"] <= cat.INJECT_QUEUE
    assert b["unit timers"] <= 65 and b["clock queue"] <= 64 and b["line bytes held"] <= 4096
    objs = fig["objects"][1:]                      # the first checkpoint still fills the history
    assert objs and max(objs) - min(objs) < 3000, fig["objects"]


def test_soak_showdown():
    s, fig = soak("showdown")
    common_checks(s, fig, SOAKS["showdown"][1])
    a, b = s.tie_losers["a"], s.tie_losers["b"]
    assert a + b > 1000 and abs(a - b) < 0.1 * (a + b)             # exact ties: the line splits them evenly
    on_b, expected = s.cards_on_b
    assert abs(on_b - expected) < 0.03 * expected                    # P(B) = 1/2 + d/W per card


def test_soak_launcher():
    s, fig = soak("launcher")
    common_checks(s, fig, SOAKS["launcher"][1])
    n = len(s.bursts)
    mean = sum(s.bursts) / n
    assert abs(mean - 17 / 3) < 0.1                                  # triangle (1, 4, 12): mean 17/3
    assert min(s.bursts) == 1 and max(s.bursts) == 12
    assert abs(s.fired_presses - s.chance_sum / 1000) < 4 * (s.chance_sum / 1000) ** 0.5


def test_soak_flash():
    s, fig = soak("flash")
    common_checks(s, fig, SOAKS["flash"][1])
    counts = list(s.selected.values())
    assert all(abs(c - sum(counts) / 3) < 0.05 * sum(counts) / 3 for c in counts)   # FL-3: uniform
    assert s.ties > 1000


def test_soak_totals():
    """All kinds together: at least 100,000 races and 3 device hours each."""
    figures = [soak(kind)[1] for kind in SOAKS]
    assert sum(f["races"] for f in figures) >= 100_000
    assert all(f["device_hours"] >= 3 and f["wraps"] >= 2 for f in figures)
