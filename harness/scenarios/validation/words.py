"""The words of the scenario language (its keys, step words and anchors) and the caps that bound the
work of validating one file (docs/scenarios.md)."""
from __future__ import annotations

import keyword
import re

from unohil.protocol import catalogue as cat

from unohil.harness.scenarios.model import UNIT_PLAYERS
from unohil.harness.scenarios.units import RIG_ANCHORS

BUILTIN_ANCHORS = ("start", "previous")
#: Every anchor of every unit kind: a sweep variable named like one would rebind it (in some file,
#: if not this one), so no sweep variable may take such a name.
ALL_ANCHORS = frozenset(BUILTIN_ANCHORS).union(*(u.anchors for u in cat.UNITS.values()), *RIG_ANCHORS.values())
#: Other names the language gives a meaning: the race index, "next green", the functions, Python's keywords.
RESERVED_NAMES = frozenset({"race", "rep", "next", "abs", "max", "min", UNIT_PLAYERS}) | frozenset(keyword.kwlist)
#: The fewest Player buttons a base has (SPEC 8, 4.2: IDENTITY.players 2 to 8): the value unit_players is
#: validated with; on a base where the name is no input, the runner skips the race, saying so.
FEWEST_PLAYERS = 2

# Caps: validation does work bounded by these, each checked before the work it bounds (docs/scenarios.md).
MAX_FILE_BYTES = 1_000_000          # a scenario file; the library's largest is 12 kB
MAX_NESTING = 100                   # YAML levels (a scenario needs 6); the composer recurses per level
MAX_NODES = 200_000                 # YAML nodes of a file, an alias counted at each use
MAX_EXPR_CHARS = 500                # the text of one time or condition
MAX_RACES = 10_000                  # races of one scenario: sweep values multiplied, times repeat
MAX_FILE_RACES = 100_000            # races of all the scenarios of one file
MAX_EVALUATIONS = 3_000_000         # expression nodes evaluated for one file (about 1 s): each time,
                                    #   every, for and when, its size times the races it is worked out for
MAX_TIMES = 1000                    # repetitions of one step (times)
#: The furthest ahead a race may schedule: the device clock is a u32 us counter (protocol/devtime.py) and
#: an INJECT 2^31 us (35 min 47 s) or more ahead of the unit's now cannot be told from one in the past (SPEC
#: 3.2); 30 min leaves the rest for the harness to get the stimulus there.
MAX_AHEAD_US = 30 * 60 * 1_000_000

LATENCY_METRICS = ("device_us", "inherent_us", "processing_us", "host_us", "host_processing_us")
TAG_FORM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")     # a word that -k and -m (as a hil_ marker) can name
TOP_KEYS = {"name", "unit", "description", "tags", "covers", "seed", "config", "repeat", "sweep", "steps",
            "expect", "end", "timeout_us", "timing", "needs", "physical", "compare"}
STEP_COMMON = {"at", "times", "every", "expect", "error", "value", "for", "until", "timeout", "on_timeout", "prompt"}
COMPARE_KEYS = {"same", "differ", "races"}
EXPECT_KEYS = {"verdict", "verdicts", "events", "absent", "count", "latency", "reaction", "rig", "cases"}
CASE_KEYS = EXPECT_KEYS - {"cases"} | {"when"}
EDGE_WORDS = {"open": "press", "close": "release", "on": "press", "off": "release"}
