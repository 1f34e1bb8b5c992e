"""unohil hello: connect to a device and show what it is."""
from __future__ import annotations

from unohil.protocol import catalogue as cat

from unohil.harness.cli.exit import Exit
from unohil.harness.session.driver import Driver


def add_parser(sub) -> None:
    p = sub.add_parser("hello", help="connect to a device and show what it is")
    p.add_argument("--device", required=True, metavar="URL",
                   help="the device: a serial port, socket://HOST:PORT, rfc2217://..., usb://..., emu://KIND")
    p.set_defaults(func=main)


def main(args) -> int:
    with Driver.open(args.device) as d:
        ident = d.identity
        est = d.clock.estimate
        print(f"{args.device}: {d.kind} unit, serial {ident.serial}, firmware "
              f"{ident.fw_major}.{ident.fw_minor}.{ident.fw_patch}, protocol {ident.proto_major}."
              f"{ident.proto_minor}, boot id {ident.boot_id:#010x}, seed {ident.seed}")
        caps = [n for n in cat.ENUM_VALUES["capability"] if d.has_cap(n)]
        print(f"  capabilities: {', '.join(caps)}; card capacity {ident.card_capacity}, players {ident.players}")
        if est is not None:
            print(f"  clock: offset {est.offset_us:.0f} us, best round trip {est.best_rtt_us} us, "
                  f"uncertainty {est.uncertainty_us:.0f} us")
    return Exit.OK
