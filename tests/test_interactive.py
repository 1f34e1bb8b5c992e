"""The interactive unit through a real terminal (tmux): keys change what the screen shows and reach a
harness connected on the unit's pty as presses with source physical; q and Ctrl-C quit leaving the
terminal as it was; without a terminal, --interactive is a usage error."""
from __future__ import annotations

import subprocess
import sys

import pytest

from unohil.harness import Driver
from unohil.protocol import catalogue as cat
from tmux_unit import TmuxUnit

PHYSICAL = cat.ENUM_VALUES["input_source"]["physical"]
PRESS, RELEASE = cat.ENUM_VALUES["action"]["press"], cat.ENUM_VALUES["action"]["release"]


@pytest.fixture
def unit(tmp_path):
    made = []

    def start(kind: str, *options: str) -> TmuxUnit:
        made.append(TmuxUnit(tmp_path, kind, *options))
        return made[-1]
    yield start
    for u in made:
        u.close()


def seen_input(d: Driver, kind: str, name: str, action: int):
    number = cat.UNITS[kind].inputs[name]
    return d.wait_for(lambda f: f.msg.NAME == "INPUT_SEEN" and f.msg.input == number and f.msg.action == action,
                      10_000_000, f"INPUT_SEEN {name}")


def test_showdown_keys_load_start_and_press_and_the_harness_sees_a_person(unit):
    u = unit("showdown")
    u.wait_screen(r"^state +empty")
    u.wait_screen(r"a paddle_a .* l paddle_b .* t timer")      # the key map is on the screen
    with Driver.open(u.path()) as d:
        u.keys("cc")
        for _ in range(2):
            f = seen_input(d, "showdown", "load_cards", PRESS)
            assert (f.msg.source, f.msg.value) == (PHYSICAL, 1)
        u.wait_screen(r"^state +loaded")
        u.keys("t")
        assert seen_input(d, "showdown", "timer", PRESS).msg.source == PHYSICAL
        assert seen_input(d, "showdown", "timer", RELEASE).msg.source == PHYSICAL    # a key: press, then release
        u.wait_screen(r"^lights +green off · red flash")
        u.wait_screen(r"^now +countdown for")
        u.keys("l")                                # before green: a false start by B
        d.wait_for(lambda f: f.msg.NAME == "SD_VERDICT", 10_000_000, "SD_VERDICT")
        u.wait_screen(r"^last +SD_VERDICT loser=b reason=false_start")
        u.wait_screen(r"^state +empty")


def test_flash_buttons_lights_and_a_held_key(unit):
    u = unit("flash", "--players", "3")
    u.wait_screen(r"1 player_0 .* 3 player_2 .* p play_pause")
    assert "4 player_3" not in u.screen()           # a base with three buttons has three keys
    with Driver.open(u.path()) as d:
        u.keys("12p")
        selected = d.wait_for(lambda f: f.msg.NAME == "FL_SELECTED", 10_000_000, "FL_SELECTED")
        u.wait_screen(rf"player {selected.msg.player} on")  # numbered as the catalogue numbers them
        u.wait_screen(r"^state +turn")
        u.keys("B")                                # Shift: BUZZER held down until B again
        assert seen_input(d, "flash", "buzzer", PRESS).msg.source == PHYSICAL
        u.wait_screen(r"^held +buzzer")
        u.keys("B")
        assert seen_input(d, "flash", "buzzer", RELEASE).msg.source == PHYSICAL
        u.wait_screen(r"^held +-")


def test_q_quits_and_the_terminal_is_as_it_was(unit):
    u = unit("launcher")
    u.wait_screen(r"space button")
    u.keys("q")
    u.wait_screen(r"^exit status 0$")
    u.send_line("stty -a")
    text = u.wait_screen(r"-?icanon").string
    assert " icanon" in text and " echo " in text and "-icanon" not in text


def test_ctrl_c_quits_cleanly(unit):
    u = unit("showdown")
    u.wait_screen(r"^keys ")
    u.key("C-c")
    u.wait_screen(r"^exit status 0$")
    assert "emulator: stopped" in u.screen()


def test_without_a_terminal_interactive_is_a_usage_error():
    done = subprocess.run([sys.executable, "-m", "unohil.harness.cli", "emulate", "showdown", "--interactive"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "emulator: --interactive needs a terminal on standard input: its keys are the unit's buttons "
        "(serve without --interactive to drive the unit from a host)"]


# ---- the key semantics, exactly, on the virtual clock (no terminal needed: keys go to on_key) ----

def keyed_unit(kind: str, **options):
    from unohil.emulator.clock import VirtualClock
    from unohil.emulator.device import Device
    from unohil.emulator.terminal import Screen
    clock = VirtualClock()               # device time is clock time: the unit boots at 0
    dev = Device(kind, clock, **options)
    dev.start()
    screen = Screen(None, dev, "/dev/pts/x", -1, -1)
    edges = []
    dev.observer = lambda m, t: edges.append((t, m)) if m.NAME == "INPUT_SEEN" else None
    return clock, dev, screen, edges


def edge_names(kind: str, edges) -> list[tuple[int, str, str, int]]:
    inputs = {v: k for k, v in cat.UNITS[kind].inputs.items()}
    return [(t, inputs[m.input], "press" if m.action == PRESS else "release", m.value) for t, m in edges]


def test_a_key_is_a_press_released_after_a_hold_and_again_before_that_releases_first():
    from unohil.emulator.terminal import HOLD_US
    clock, dev, screen, edges = keyed_unit("showdown")
    t0 = clock.now()
    screen.on_key("a")
    clock.advance_to(t0 + 10_000)
    screen.on_key("a")                                  # again, before its release
    clock.advance_to(t0 + 10_000 + 2 * HOLD_US)
    assert edge_names("showdown", edges) == [
        (t0, "paddle_a", "press", 0), (t0 + 10_000, "paddle_a", "release", 0),
        (t0 + 10_000, "paddle_a", "press", 0), (t0 + 10_000 + HOLD_US, "paddle_a", "release", 0)]
    assert all(m.source == PHYSICAL for _, m in edges)


def test_valued_keys_add_and_take_one_card_and_switch_keys_step_through_the_catalogue_positions():
    clock, dev, screen, edges = keyed_unit("launcher")
    for char in "dccCd":
        screen.on_key(char)
        clock.advance_to(clock.now() + 1000)
    assert [e[1:] for e in edge_names("launcher", edges)] == [
        ("door", "press", 0), ("load_cards", "press", 1), ("load_cards", "press", 1),
        ("load_cards", "release", 1), ("door", "release", 0)]          # door: open is a press, closed a release
    assert screen.positions["door"] == "closed"


def test_shift_holds_play_pause_and_buzzer_until_the_flash_resets():
    clock, dev, screen, edges = keyed_unit("flash", players=3)
    assert "player_3" not in {k.input for k in screen.keys.values()}
    resets = []
    watched = dev.observer
    dev.observer = lambda m, t: (watched(m, t), resets.append(t) if m.NAME == "FL_RESET" else None)
    t0 = clock.now()
    screen.on_key("P")
    screen.on_key("B")
    hold = dev.config["reset_hold_us"]
    clock.advance_to(t0 + hold)
    assert resets == [t0 + hold] and screen.held == {"play_pause", "buzzer"}
    screen.on_key("P")
    assert screen.held == {"buzzer"}


def test_path_file_holds_what_stdout_says_and_an_unwritable_one_is_a_usage_error(tmp_path):
    import signal

    from tmux_unit import wait_until
    path_file = tmp_path / "paths"
    proc = subprocess.Popen([sys.executable, "-m", "unohil.harness.cli", "emulate", "launcher", "--count", "2",
                             "--path-file", str(path_file)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        printed = [proc.stdout.readline().strip() for _ in range(2)]
        wait_until(path_file.exists, str(path_file))
        assert path_file.read_text().split() == printed and all(p.startswith("/dev/pts/") for p in printed)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    bad = tmp_path / "no" / "such" / "dir"
    done = subprocess.run([sys.executable, "-m", "unohil.harness.cli", "emulate", "launcher", "--path-file", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and f"emulator: --path-file {bad}: No such file or directory" in done.stderr
