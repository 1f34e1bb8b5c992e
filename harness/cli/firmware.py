"""--firmware IMAGE and --console URL, shared by run and conform: the image put on each unit before its
session starts (harness/links/lifecycle.py does it through the link's lifecycle), and the unit's debug
console read beside its link (harness/links/console.py)."""
from __future__ import annotations

from pathlib import Path

from unohil.harness.errors import UsageError


def add_firmware_argument(p, many: bool) -> None:
    p.add_argument("--firmware", metavar="IMAGE",
                   help="put this firmware image on the unit(s) first (a qemu: unit boots it; a real board "
                        "needs a flasher, see firmware.md in the uno-hil docs)")
    p.add_argument("--lifecycle", metavar="ENV.yaml[#TARGET]",
                   help="flash and power-cycle the unit through this labgrid environment's target (default "
                        "main): its BootstrapProtocol driver for --firmware, its PowerProtocol driver for a unit "
                        "that stops answering" + ("; with one --device" if many else ""))
    p.add_argument("--console", metavar="URL", action="append" if many else "store",
                   help="the unit's debug text (socket://HOST:PORT, or a serial port, pty or FIFO), captured "
                        "beside its link into the trace and results" + (
                            "; repeatable, the Nth for the Nth --device" if many else "")
                        + " (a qemu: unit's second UART is captured without it)")


def attach_consoles(links: list, urls: list[str] | None) -> list:
    """Open each --console URL and give it to the link of the same position; returns the readers, for
    closing. More consoles than devices is a usage error."""
    from unohil.harness.links.console import open_console
    urls = urls or []
    if len(urls) > len(links):
        raise UsageError(f"{len(urls)} --console for {len(links)} device(s): give one per --device, in their order")
    readers = []
    try:
        for link, url in zip(links, urls):
            link.console = open_console(url)
            readers.append(link.console)
    except BaseException:
        for r in readers:
            r.close()
        raise
    return readers


def firmware_image(text: str | None) -> Path | None:
    """The image named, checked to be a file before any unit is touched."""
    if text is None:
        return None
    path = Path(text)
    if not path.is_file():
        raise UsageError(f"--firmware: no such file: {text}")
    return path


def unit_opener(args, devices: int):
    """The opener --firmware and --lifecycle ask for (None when neither is given): a labgrid target's
    lifecycle is read before any unit is touched."""
    image = firmware_image(args.firmware)
    if args.lifecycle is None and image is None:
        return None
    from unohil.harness.links.lifecycle import flashing_opener, labgrid_lifecycle
    if args.lifecycle is not None and devices != 1:
        raise UsageError("--lifecycle is one unit's: give exactly one --device with it")
    return flashing_opener(image, lifecycle=labgrid_lifecycle(args.lifecycle) if args.lifecycle else None)
