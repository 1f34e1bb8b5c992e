"""labgrid://: a unit on a place of a labgrid coordinator, the lab's lock across hosts.

  labgrid://PLACE            that place: used as it is if this host and user acquired it, else
                             acquired now (and released at the end); held by someone else: busy
  labgrid://+                the place reserved for $LG_TOKEN (`labgrid-client reserve`), the same way
  labgrid://?unit=showdown   any place with these tags: a reservation is made and waited for (as long
                             as the wait in force, `--wait SECONDS`), the place it gets is acquired, and
                             at the end released and the reservation cancelled (a waiting reservation
                             otherwise gets the place only when ours expires, ~60 s later)

The coordinator is $LG_COORDINATOR (HOST:PORT, labgrid's own variable), else 127.0.0.1:20408.
The place's serial resource (a NetworkSerialPort: ser2net's RFC 2217 or raw TCP, or
`unohil emulate --tcp`) gives the link: rfc2217:// or socket://, itself claimed on this host
(claim.py). labgrid is an optional extra (pip install 'uno-hil[labgrid]'), imported only here.

labgrid brings pyserial-labgrid, which ships the same `serial` package as pyserial: the files on
disk are those of whichever was installed last, and uninstalling either one removes them for
both. serial_clash() tells which state this installation is in; a broken one is an error at
connect time naming the fix.
"""
from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from urllib.parse import parse_qsl, unquote, urlsplit

from unohil.harness.errors import DeviceBusy, DeviceURLError, LinkClosed
from unohil.harness.links import claim, open_link, register_scheme

log = logging.getLogger("unohil.links.labgrid")

DEFAULT_COORDINATOR = "127.0.0.1:20408"
POLL_S = 0.25           # how often a waiting reservation is polled (labgrid-client's own: 1 s)
SERIAL_CLASSES = ("NetworkSerialPort",)
RESERVATION_ENDED = {3: "expired", 4: "invalid"}     # labgrid's ReservationState values a wait cannot outlast
EXTRA_HINT = "pip install 'uno-hil[labgrid]'"
_clash_logged = False


# ---- the pyserial clash ----

def serial_clash(distributions=None, serial_import=None) -> tuple[str, str] | None:
    """(level, explanation) when pyserial and pyserial-labgrid disagree, else None.

    level "error": the `serial` package is gone (one of the two was uninstalled); "warning": both
    are installed, so the next install or uninstall of either changes the other's files."""
    from importlib import metadata
    if distributions is None:
        distributions = {(d.metadata["Name"] or "").lower() for d in metadata.distributions()}
    have = {name for name in ("pyserial", "pyserial-labgrid") if name in distributions}
    if not have:
        return None
    try:
        (serial_import or _import_serial)()
    except ImportError as exc:
        return ("error", f"the `serial` package does not import ({exc}) although {' and '.join(sorted(have))} "
                         f"{'is' if len(have) == 1 else 'are'} installed: pyserial and pyserial-labgrid ship the "
                         f"same files, and uninstalling one removed them for both. Reinstall the one labgrid "
                         f"needs: pip install --force-reinstall --no-deps pyserial-labgrid")
    if len(have) == 2:
        return ("warning", "pyserial and pyserial-labgrid are both installed and ship the same `serial` package "
                           "(labgrid needs pyserial-labgrid, uno-hil works with either): never uninstall one of "
                           "them alone; if `serial` breaks, pip install --force-reinstall --no-deps pyserial-labgrid")
    return None


def _import_serial():
    import serial
    serial.serial_for_url     # noqa: B018  (a half-removed package imports but lacks this)


def _check_serial() -> None:
    global _clash_logged
    found = serial_clash()
    if found is None:
        return
    level, text = found
    if level == "error":
        raise DeviceURLError(text)
    if not _clash_logged:
        _clash_logged = True
        log.info(text)


def _labgrid():
    try:
        from labgrid.remote import client
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb2
    except ImportError as exc:
        _check_serial()
        raise DeviceURLError(f"labgrid:// needs labgrid ({exc}): {EXTRA_HINT}") from None
    return client, pb2


# ---- the URL ----

def parse(url: str) -> tuple[str | None, dict[str, str]]:
    """(place or "+" or None, tags) of a labgrid:// URL."""
    parts = urlsplit(url)
    place = unquote(parts.netloc or parts.path.lstrip("/")) or None
    tags = dict(parse_qsl(parts.query, keep_blank_values=True))
    if place and tags:
        raise DeviceURLError(f"{url}: name a place (labgrid://PLACE) or tags (labgrid://?unit=showdown), not both")
    if not place and not tags:
        raise DeviceURLError(f"{url}: name a place (labgrid://PLACE), the reserved one (labgrid://+, with "
                             f"$LG_TOKEN) or tags to reserve one by (labgrid://?unit=showdown)")
    for key, value in tags.items():
        if not re.fullmatch(r"[a-z][a-z0-9_]+", key) or not re.fullmatch(r"[a-z0-9_]+", value):
            raise DeviceURLError(f"{url}: tag {key}={value!r}: labgrid tags are lower-case letters, digits and _ "
                                 f"(a key of two or more characters starting with a letter)")
    return place, tags


def coordinator_address() -> str:
    return os.environ.get("LG_COORDINATOR") or DEFAULT_COORDINATOR


# ---- a session with the coordinator ----

class Coordinator:
    """One client session on its own event loop; every call runs to completion."""

    def __init__(self, url: str):
        self.url = url
        self.address = coordinator_address()
        self.client, self.pb2 = _labgrid()
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)       # grpc.aio binds its channel to the thread's current loop
        try:
            self.session = self.client.start_session(self.address, loop=self.loop)
        except Exception as exc:
            self._end_loop()
            raise DeviceURLError(f"{url}: cannot reach the labgrid coordinator at {self.address} "
                                 f"(LG_COORDINATOR): {exc}") from None

    def call(self, rpc: str, **request):
        import grpc
        req = getattr(self.pb2, f"{rpc}Request")(**request)
        try:
            out = self.loop.run_until_complete(getattr(self.session.stub, rpc)(req))
            self.loop.run_until_complete(self.session.sync_with_coordinator())
        except grpc.aio.AioRpcError as exc:
            raise _RpcRefused(exc.details() or str(exc.code())) from None
        return out

    @property
    def name(self) -> str:
        """Who this session is to the coordinator (host/user, as labgrid-client is)."""
        return f"{self.session.gethostname()}/{self.session.getuser()}"

    def sleep(self, seconds: float) -> None:
        self.loop.run_until_complete(asyncio.sleep(seconds))

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.session.stop())
            self.loop.run_until_complete(self.session.close())
        except Exception as exc:        # the coordinator went away first: nothing left to tidy
            log.debug("closing the labgrid session: %s", exc)
        finally:
            self._end_loop()

    def _end_loop(self) -> None:
        self.loop.close()
        asyncio.set_event_loop(None)

    def __enter__(self) -> "Coordinator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _RpcRefused(Exception):
    pass


def _describe_places(places) -> str:
    out = []
    for p in places:
        state = (f"acquired by {p.acquired}" if p.acquired else
                 "reserved" if p.reservation else "free")
        out.append(f"{p.name} ({state})")
    return ", ".join(out) or "none"


def _tags_text(tags: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in tags.items())


# ---- taking a place ----

class Holding:
    """A place this process took: what to give back at the end."""

    def __init__(self, url: str, place: str, *, acquired: bool, token: str | None):
        self.url = url
        self.place = place
        self.acquired = acquired        # we acquired it: release it
        self.token = token              # we reserved it: cancel the reservation

    def give_back(self, co: Coordinator | None = None) -> None:
        if not self.acquired and not self.token:
            return
        own = co is None
        try:
            co = co or Coordinator(self.url)
        except DeviceURLError as exc:
            log.warning("%s: place %s could not be released: %s (labgrid-client -p %s release)",
                        self.url, self.place, exc, self.place)
            return
        try:
            if self.acquired:
                try:
                    co.call("ReleasePlace", placename=self.place)
                except _RpcRefused as exc:
                    log.warning("%s: releasing place %s: %s", self.url, self.place, exc)
                self.acquired = False
            if self.token:
                try:
                    co.call("CancelReservation", token=self.token)
                except _RpcRefused as exc:
                    log.debug("%s: cancelling reservation %s: %s", self.url, self.token, exc)
                self.token = None
        finally:
            if own:
                co.close()


def _reserve(co: Coordinator, url: str, tags: dict) -> Holding:
    places = list(co.session.places.values())
    matching = [p for p in places if all(p.tags.get(k) == v for k, v in tags.items())]
    if not matching:
        known = ", ".join(f"{p.name} {_tags_text(p.tags) or 'untagged'}" for p in places) or "none"
        raise DeviceURLError(f"{url}: no place of the coordinator at {co.address} has the tags {_tags_text(tags)} "
                             f"(places: {known})")
    filters = {"main": co.pb2.Reservation.Filter(filter=tags)}
    res = co.call("CreateReservation", filters=filters, prio=0.0).reservation
    holding = Holding(url, "", acquired=False, token=res.token)
    try:
        deadline = time.monotonic() + claim.wait_s()
        while "main" not in res.allocations:
            state = RESERVATION_ENDED.get(res.state)
            if state is not None:
                raise DeviceURLError(f"{url}: the reservation for {_tags_text(tags)} became {state}")
            if time.monotonic() >= deadline:
                waited = claim.wait_s()
                raise DeviceBusy(f"{url}: no place with {_tags_text(tags)} is free: {_describe_places(matching)}; "
                                 + (f"still none after waiting {waited:g} s" if waited else
                                    "wait for one with --wait SECONDS (pytest: --hil-wait SECONDS)"),
                                 holder={"places": {p.name: p.acquired for p in matching}})
            co.sleep(POLL_S)
            res = co.call("PollReservation", token=res.token).reservation
            matching = [p for p in co.session.places.values() if p.name in {m.name for m in matching}]
        holding.place = res.allocations["main"]
        co.call("AcquirePlace", placename=holding.place)
        holding.acquired = True
    except BaseException:
        holding.give_back(co)
        raise
    return holding


def _take_place(co: Coordinator, url: str, pattern: str) -> Holding:
    if pattern == "+" and not os.environ.get("LG_TOKEN"):
        raise DeviceURLError(f"{url}: labgrid://+ is the place of $LG_TOKEN, and LG_TOKEN is not set "
                             f"(eval $(labgrid-client reserve --shell unit=showdown))")
    deadline = time.monotonic() + claim.wait_s()
    while True:
        try:
            place = co.session.get_place(pattern)
        except co.client.Error as exc:
            raise DeviceURLError(f"{url}: {str(exc).removeprefix('Error: ')} (the coordinator at {co.address} has "
                                 f"{', '.join(sorted(co.session.places)) or 'no place'})") from None
        if place.acquired == co.name:
            return Holding(url, place.name, acquired=False, token=None)   # the caller's: theirs to release
        if not place.acquired:
            try:
                co.call("AcquirePlace", placename=place.name)
                return Holding(url, place.name, acquired=True, token=None)
            except _RpcRefused as exc:
                refused = str(exc)
        else:
            refused = f"acquired by {place.acquired}"
        if time.monotonic() >= deadline:
            waited = claim.wait_s()
            raise DeviceBusy(f"{url}: place {place.name} is {refused}; "
                             + (f"still after waiting {waited:g} s" if waited else
                                "wait for it with --wait SECONDS (pytest: --hil-wait SECONDS)"),
                             holder={"acquired": place.acquired})
        co.sleep(POLL_S)
        co.loop.run_until_complete(co.session.sync_with_coordinator())


def serial_url(co: Coordinator, url: str, place_name: str) -> str:
    """The link URL of the place's one serial resource."""
    place = co.session.places[place_name]
    found = []
    for path in place.acquired_resources:
        exporter, group, cls, name = path
        if cls not in SERIAL_CLASSES:
            continue
        entry = co.session.resources.get(exporter, {}).get(group, {}).get(name)
        if entry is None or not entry.avail:
            raise DeviceURLError(f"{url}: place {place_name}'s {exporter}/{group}/{cls}/{name} is not available "
                                 f"(is its exporter running?)")
        found.append(entry)
    if len(found) != 1:
        raise DeviceURLError(f"{url}: place {place_name} has {len(found)} serial resources ({', '.join(SERIAL_CLASSES)}); "
                             f"it needs exactly one: labgrid-client -p {place_name} add-match 'EXPORTER/GROUP/"
                             f"NetworkSerialPort'")
    args = found[0].args
    host, port, protocol = args.get("host"), args.get("port"), args.get("protocol", "rfc2217")
    shown = f"[{host}]" if host and ":" in host else host
    if protocol == "raw":
        return f"socket://{shown}:{port}"
    if protocol == "rfc2217":
        return f"rfc2217://{shown}:{port}?ign_set_control"
    raise DeviceURLError(f"{url}: place {place_name}'s serial port speaks {protocol!r}; raw or rfc2217 work")


# ---- the link ----

class PlaceLink:
    """The serial link of a held place; the place is given back when this link is closed.

    If the serial connection drops (the unit's ser2net restarted), the next read or write opens it
    again on the same place: the place stays held, so no other runner slips in between."""

    virtual = False

    def __init__(self, url: str, holding: Holding, serial: str):
        self.url = url
        self.holding = holding
        self.serial_url = serial
        self.closed = False
        self._link = open_link(serial)
        self._dead = False

    def _live(self):
        if self._dead:
            self._link.close()
            self._link = open_link(self.serial_url)
            self._dead = False
        return self._link

    def read(self, timeout_us: int):
        try:
            return self._live().read(timeout_us)
        except LinkClosed:
            self._dead = True
            raise

    def write(self, data: bytes) -> None:
        try:
            self._live().write(data)
        except LinkClosed:
            self._dead = True
            raise

    def now_us(self) -> int:
        return self._link.now_us()

    def __getattr__(self, name):
        link = self.__dict__.get("_link")           # the claim and whatever the serial link offers
        if link is None:
            raise AttributeError(name)
        return getattr(link, name)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self._link.close()
        finally:
            self.holding.give_back()


def open_labgrid(url: str) -> PlaceLink:
    pattern, tags = parse(url)
    _check_serial()
    with Coordinator(url) as co:
        holding = _reserve(co, url, tags) if tags else _take_place(co, url, pattern)
        try:
            serial = serial_url(co, url, holding.place)
        except BaseException:
            holding.give_back(co)
            raise
    try:
        link = PlaceLink(url, holding, serial)
    except BaseException:
        holding.give_back()
        raise
    log.info("%s: place %s, serial port %s", url, holding.place, serial)
    return link


register_scheme("labgrid", open_labgrid)
