"""What conformance knows of each unit kind: its SPEC section, its power-on state, the inputs that
bring a fresh unit to the situation a check needs, and the cross-parameter rules of SPEC 4.7."""
from __future__ import annotations

KIND_SECTION = {"showdown": "7", "flash": "8", "launcher": "9"}
POWER_ON = {"showdown": "empty", "flash": "setup", "launcher": "ready"}

# Per unit kind, from the state tables of SPEC.md sections 7-9: inputs (name, action, value) that
# bring a fresh unit to the situation a check needs; the last input of each is the one judged.
RECIPES = {
    "showdown": {
        "report": ("paddle_a", "release", 0),                       # reported, changes nothing
        "stimulus": ("load_cards", "press", 1),
        "refused": [("timer", "press", 0)],                          # empty tray: wrong_state
        "refused_value": [("load_cards", "press", 0)],               # zero cards: bad_value
        "busy_config": {},
        "busy": [("load_cards", "press", 2), ("timer", "press", 0)],   # countdown
    },
    "flash": {
        "report": ("player_0", "release", 0),
        "stimulus": ("player_0", "press", 0),
        "refused": [("play_pause", "press", 0)],                     # setup, < 2 registered
        "refused_value": None,
        "busy_config": {},
        "busy": [("player_0", "press", 0), ("player_1", "press", 0), ("play_pause", "press", 0)],   # turn
    },
    "launcher": {
        "report": ("button", "release", 0),
        "stimulus": ("door", "press", 0),
        "refused": [("door", "press", 0), ("button", "press", 0)],   # door open: wrong_state
        "refused_value": [("door", "press", 0), ("load_cards", "press", 0)],
        "busy_config": {"fire_base_permille": 1000, "motor_us": 2_000_000},
        "busy": [("door", "press", 0), ("load_cards", "press", 5), ("door", "release", 0), ("button", "press", 0)],
    },
}


def cross_rules_ok(kind: str, config: dict[str, int]) -> bool:
    """The cross-parameter rules of SPEC.md 4.7."""
    if kind == "showdown":
        return config["countdown_min_us"] <= config["countdown_max_us"] and config["flight_us"] > config["tie_window_us"]
    if kind == "launcher":
        return config["burst_min"] <= config["burst_mode"] <= config["burst_max"]
    return True
