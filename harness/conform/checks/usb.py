"""Conformance checks of SPEC 10: the USB binding."""
from __future__ import annotations


from unohil.harness.conform.registry import check
from unohil.harness.conform.wire import expect
from unohil.harness.links.usb import UsbLink


def on_usb(cs) -> bool:
    return isinstance(cs.link, UsbLink)


@check("10", "USB iSerialNumber is IDENTITY.serial as 8 upper-case hex digits", when=on_usb)
def usb_serial(cs):
    s = cs.link.serial
    want = f"{cs.ident.serial:08X}"
    expect(s == want, f"iSerialNumber {s!r}, IDENTITY.serial {cs.ident.serial} = {want!r} (SHOULD, 10.1)")
