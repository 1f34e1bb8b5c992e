"""A unit's lifecycle: the two things a bench does to a unit besides talking to it.

  flash(image)     put this firmware image on the unit (it boots it)
  power_cycle()    power off, then on: the one way back for a unit that stopped answering

A link that can do them carries a Lifecycle as `link.lifecycle`: a qemu: link always (QemuLifecycle:
restart QEMU with the image; kill QEMU and start it again), a real board through labgrid's drivers
(LabgridLifecycle: the target's BootstrapProtocol driver, e.g. OpenOCDDriver, flashes; its
PowerProtocol driver, e.g. a PDU's or ExternalPowerDriver, cycles), given with `--lifecycle
ENV.yaml[#TARGET]` (a labgrid environment file). `unohil run/conform --firmware
IMAGE` flashes before the run; a run whose unit stops answering power-cycles it (harness/run/runner.py),
the cut race a link error that says so.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

from unohil.harness.errors import DeviceURLError, HarnessError


class LifecycleError(HarnessError):
    """The unit could not be flashed or power-cycled; the message says by what and why."""


class Lifecycle(Protocol):
    what: str           # how it is done, for messages: "QEMU restarted", "labgrid power driver ..."

    def flash(self, image: Path) -> None: ...

    def power_cycle(self) -> None: ...


def of(link) -> Lifecycle | None:
    return getattr(link, "lifecycle", None)


class QemuLifecycle:
    """A QEMU unit (harness/links/qemu.py): its power is the QEMU process."""

    what = "QEMU killed and started again"

    def __init__(self, unit):
        self.unit = unit

    def flash(self, image: Path) -> None:
        try:
            self.unit.power_cycle(Path(image))
        except DeviceURLError as exc:
            raise LifecycleError(f"cannot flash {image}: {exc}") from None

    def power_cycle(self) -> None:
        try:
            self.unit.power_cycle()
        except DeviceURLError as exc:
            raise LifecycleError(f"power cycle failed: {exc}") from None


class LabgridLifecycle:
    """A real board through a labgrid target's drivers: BootstrapProtocol.load(image) flashes,
    PowerProtocol.cycle() power-cycles (each activated on first use; a target without one says so)."""

    def __init__(self, target):
        self.target = target
        self.what = f"labgrid target {getattr(target, 'name', '?')}"

    def _driver(self, protocol: str, doing: str):
        try:
            driver = self.target.get_driver(protocol)
        except Exception as exc:       # labgrid's NoDriverFoundError and friends: one message
            raise LifecycleError(f"{self.what} has no {protocol} driver to {doing} with: {exc}") from None
        self.target.activate(driver)
        return driver

    def flash(self, image: Path) -> None:
        driver = self._driver("BootstrapProtocol", f"flash {image}")
        try:
            driver.load(str(image))
        except Exception as exc:
            raise LifecycleError(f"{self.what}: {type(driver).__name__} could not flash {image}: {exc}") from None

    def power_cycle(self) -> None:
        driver = self._driver("PowerProtocol", "power-cycle")
        try:
            driver.cycle()
        except Exception as exc:
            raise LifecycleError(f"{self.what}: {type(driver).__name__} could not power-cycle: {exc}") from None


def flashing_opener(image: Path | None, opener=None, lifecycle: Lifecycle | None = None):
    """An opener (url -> link) that gives the link `lifecycle` (when one is given: a real board's, from
    --lifecycle) and puts `image` on the unit (when one is given) before anyone talks to it: what
    `--firmware IMAGE` gives run and conform. Flashing a link without a lifecycle is an error saying so."""
    given = lifecycle
    flashed: set[str] = set()       # a link opened again (a reconnect) is not flashed again

    def open_and_flash(url: str):
        from unohil.harness.links import open_link
        link = (opener or open_link)(url)
        try:
            if given is not None:
                link.lifecycle = given
            if image is None or url in flashed:
                return link
            lifecycle = of(link)
            if lifecycle is None:
                raise DeviceURLError(f"{url}: --firmware: nothing here can put an image on this unit (a qemu: unit "
                                     f"can; a real board through a labgrid target with a flasher driver)")
            lifecycle.flash(Path(image))
            flashed.add(url)
        except BaseException:
            link.close()
            raise
        return link
    return open_and_flash


def power_cycle_hung(driver) -> str:
    """A unit that stopped answering mid-run, power-cycled when its link has a lifecycle: what was done,
    for the cut race's error ("" when nothing can be done: the link's recovery goes on as it would)."""
    lifecycle = of(driver.link)
    if lifecycle is None or _answers(driver):
        return ""
    try:
        lifecycle.power_cycle()
    except LifecycleError as exc:
        return f"the unit stopped answering and could not be power-cycled: {exc}"
    return f"the unit stopped answering: power-cycled ({lifecycle.what})"


def _answers(driver) -> bool:
    """Whether the unit answers STATUS_GET now (twice retried): a unit that was only slow (a loaded host, a
    late reply) is not power-cycled."""
    from unohil.harness.errors import DeviceReset, LinkError
    from unohil.protocol import msg
    try:
        driver.command(msg.STATUS_GET(), retries=2)
    except DeviceReset:
        return True             # it answers, from a new boot: the session's recovery deals with that
    except LinkError:
        return False
    except HarnessError:
        return True             # a NAK is an answer
    return True


def labgrid_lifecycle(spec: str) -> LabgridLifecycle:
    """--lifecycle ENV.yaml[#TARGET]: the target (default main) of a labgrid environment file, whose
    drivers flash and power-cycle the unit. DeviceURLError when labgrid, the file or the target is missing."""
    path, _, role = spec.partition("#")
    role = role or "main"
    try:
        from labgrid import Environment
    except ImportError:
        raise DeviceURLError(f"--lifecycle {spec}: labgrid is not installed (pip install 'uno-hil[labgrid]')") from None
    if not Path(path).is_file():
        raise DeviceURLError(f"--lifecycle {spec}: no such labgrid environment file: {path}")
    try:
        target = Environment(config_file=path).get_target(role)
    except Exception as exc:        # labgrid's own errors for a file it cannot read: one message
        raise DeviceURLError(f"--lifecycle {spec}: labgrid cannot read {path}: {exc}") from None
    if target is None:
        raise DeviceURLError(f"--lifecycle {spec}: {path} has no target {role!r}")
    return LabgridLifecycle(target)
