"""The C99 protocol library for firmware, clib/, generated from the catalogue and SPEC.md.

    python -m tools.clib --write    regenerate clib/uhil_*.{h,c}
    python -m tools.clib --check    exit 1 if they differ from what the catalogue and the SPEC give

What comes from where (one source of truth per fact):
- every message layout, enum, parameter, capability bit and constant: protocol/messages.yaml, through
  protocol/catalogue.py;
- the normative C of SPEC.md (CRC 2.2, COBS 2.3, the receiver 2.6, uhil_diff 3.2, the reference
  generator 6.0, the burst distribution 6.5): lifted verbatim from SPEC.md's ```c blocks, so the library
  runs exactly the code the SPEC prints (and that its own test compiles against the vectors);
- what the SPEC states only in words (the frame builder, the NAK each receiver error owes, the other
  integer algorithms of section 6): written here, once.

One header and source per concern:
  uhil_catalogue   constants, enums, capability bits, parameters, message ids and payload sizes
  uhil_framing     CRC-16/CCITT-FALSE, COBS, uhil_diff, building a frame
  uhil_rx          the byte-at-a-time receiver (SPEC 2.6) and the NAK each error owes
  uhil_messages    a struct, packer and unpacker per message; uhil_msg, the tagged union of them all
  uhil_rng         the reference generator (PCG32) and U(n)
  uhil_algorithms  the integer algorithms of SPEC 6

The library uses no heap and no libc beyond <stdint.h>, <stddef.h> and <string.h>; its only state is in
structs the caller owns (struct uhil_rx, uhil_rng).

The generator by source: tools/clib_catalogue.py (uhil_catalogue), tools/clib_spec.py (what SPEC.md's C
gives: uhil_framing, uhil_rx, uhil_rng, uhil_algorithms), tools/clib_messages.py (uhil_messages and the
test support), tools/clib_c.py (the C text they share).
"""
from __future__ import annotations

import sys
from pathlib import Path

from tools import generated
from tools.clib_catalogue import catalogue_files
from tools.clib_messages import fields_files, messages_files
from tools.clib_spec import spec_files, spec_items

ROOT = Path(__file__).resolve().parent.parent
SPEC_PATH = ROOT / "protocol" / "SPEC.md"
CLIB_DIR = ROOT / "clib"
__all__ = ["CLIB_DIR", "SPEC_PATH", "check", "main", "outputs", "spec_items"]


def outputs() -> dict[Path, str]:
    spec = SPEC_PATH.read_text(encoding="utf-8")
    files: dict[str, str] = {}
    files.update(catalogue_files())
    files.update(spec_files(spec))
    files.update(messages_files())
    files.update(fields_files())
    return {CLIB_DIR / name: text for name, text in sorted(files.items())}


def check() -> list[str]:
    return generated.stale(outputs())


def main(argv: list[str] | None = None) -> int:
    return generated.cli(argv, "tools.clib", __doc__, outputs, check, CLIB_DIR)


if __name__ == "__main__":
    sys.exit(main())
