"""What a Device is built from: the model of its kind, its unit options and `without=` checked against the
catalogue, and the firmware version and serial it reports."""
from __future__ import annotations

import importlib
import os

from unohil import protocol
from unohil.protocol import ENUMS

from .model import UnitModel

KIND = ENUMS["unit_kind"]


def model_class(kind: str) -> type[UnitModel]:
    """The model of a unit kind: emulator/<kind>.py's MODEL."""
    if kind not in KIND.__members__:
        raise ValueError(f"unknown unit kind {kind!r}; the catalogue has {', '.join(KIND.__members__)}")
    try:
        module = importlib.import_module(f"unohil.emulator.{kind}")
    except ModuleNotFoundError as exc:
        if exc.name != f"emulator.{kind}":
            raise
        raise ValueError(f"no emulator model for unit kind {kind!r} yet") from None
    return module.MODEL


def check_options(cls: type[UnitModel], options: dict) -> dict:
    out = {}
    for name, value in options.items():
        if name not in cls.OPTIONS:
            raise TypeError(f"{cls.KIND}: unknown unit option {name!r}; options: {', '.join(cls.OPTIONS) or 'none'}")
        _default, lo, hi = cls.OPTIONS[name]
        if not isinstance(value, int) or not lo <= value <= hi:
            raise ValueError(f"{cls.KIND}: {name} must be an integer in [{lo}, {hi}], not {value!r}")
        out[name] = value
    return out


def check_without(without) -> frozenset[str]:
    names = [w for w in (without.split(",") if isinstance(without, str) else without) if w]
    commanded = {m.capability for m in protocol.catalogue.MESSAGES if m.capability}
    for name in names:
        if name not in commanded:
            raise ValueError(f"without: {name!r} is not a capability a command needs; "
                             f"give some of {', '.join(sorted(commanded))}")
    return frozenset(names)


def firmware_version(text: str) -> tuple[int, int, int]:
    """A firmware version given as MAJOR.MINOR.PATCH (each a u8, as IDENTITY carries them)."""
    parts = str(text).split(".")
    if len(parts) != 3 or not all(p.isdigit() and int(p) <= 255 for p in parts):
        raise ValueError(f"firmware must be MAJOR.MINOR.PATCH with each part 0..255, not {text!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


def own_serial(index: int = 0, pid: int | None = None) -> int:
    """A serial that no other unit served on this host reports now: this process's pid and the unit's
    index, pid * 4096 + index, so that two emulator processes are never one unit to the harness's
    claims (harness/links/claim.py). Taken modulo NONE_U32, the serial of a unit that has none."""
    return ((os.getpid() if pid is None else pid) * 4096 + index) % 0xFFFFFFFF
