"""Waits for a person (a wait_for step with a prompt, docs/scenarios.md): what the runner tells whoever
shows prompts (the CLI, the pytest plugin, a test standing in for the person) when such a wait starts
and when it ends."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from unohil.protocol import Frame, catalogue as cat

from unohil.harness.text import duration, printable


@dataclass(frozen=True)
class Prompt:
    """A wait for a person, as it starts."""

    scenario: str
    file: str
    line: int               # the step's line
    race: int
    device: str             # the unit's URL: where the person is to act
    text: str               # the prompt, its expressions worked out for the race
    awaited: str            # the event that answers it ('INPUT_SEEN (input paddle_a, source physical)')
    since_dev_us: int       # the device time the wait counts from (the previous step's time)
    start_dev_us: int       # the race's start on the device clock
    timeout_us: int


@dataclass(frozen=True)
class Answer:
    """How a wait for a person ended: the event that answered it, or None when it ran out (or the race
    was cut); text says it for a person ('paddle_a pressed 182.114 ms after green')."""

    prompt: Prompt
    frame: Frame | None
    text: str


class PromptHook(Protocol):
    def shown(self, prompt: Prompt) -> None:
        """The wait has started: show the prompt until answered() (called from the runner's thread)."""

    def answered(self, answer: Answer) -> None:
        """The wait has ended, answered or not."""


def answer_text(f: Frame, events: list[Frame], kind: str, start_dev_us: int) -> str:
    """The event that answered a prompt, for a person: what it was, and when after the latest event
    anchor of the race before it (or the race's start)."""
    unit = cat.UNITS[kind]
    if f.msg.NAME == "INPUT_SEEN":
        names = cat.ENUM_NAMES[f"{kind}_input"]
        action = cat.enum_name("action", f.msg.action)
        what = f"{names.get(f.msg.input, f'input {f.msg.input}')} {action}{'d' if action.endswith('e') else 'ed'}"
    else:
        what = f.msg.NAME
    anchor_of = {event: anchor for anchor, event in unit.anchors.items()}
    before = [e for e in events if e is not f and e.dev_us <= f.dev_us and e.msg.NAME in anchor_of]
    name, t = (anchor_of[before[-1].msg.NAME], before[-1].dev_us) if before else ("start", start_dev_us)
    return f"{what} {duration(f.dev_us - t)} after {name}"


def prompt_line(prompt: Prompt) -> str:
    """The prompt as one line, 'PROMPT <scenario>: <text>' (terminal-safe)."""
    return f"PROMPT {printable(prompt.scenario)}: {printable(prompt.text)}"


def answer_line(answer: Answer) -> str:
    """How the wait ended as one line, 'ANSWERED <scenario>: <how>' or 'UNANSWERED ...'."""
    word = "ANSWERED" if answer.frame is not None else "UNANSWERED"
    return f"{word} {printable(answer.prompt.scenario)}: {printable(answer.text)}"
