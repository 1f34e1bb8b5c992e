"""--firmware IMAGE, shared by run and conform: the image put on each unit before its session starts
(harness/links/lifecycle.py does it through the link's lifecycle)."""
from __future__ import annotations

from pathlib import Path

from unohil.harness.errors import UsageError


def add_firmware_argument(p) -> None:
    p.add_argument("--firmware", metavar="IMAGE",
                   help="put this firmware image on the unit(s) first (a qemu: unit boots it; a real board "
                        "needs a flasher, see firmware.md in the uno-hil docs)")


def firmware_image(text: str | None) -> Path | None:
    """The image named, checked to be a file before any unit is touched."""
    if text is None:
        return None
    path = Path(text)
    if not path.is_file():
        raise UsageError(f"--firmware: no such file: {text}")
    return path
