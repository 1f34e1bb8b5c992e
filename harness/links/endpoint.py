"""What a device URL connects to, however it is spelled: the name a claim locks (claim.py).

- socket:// and rfc2217:// are one endpoint per host and port. The host is its address, and every
  spelling of this host is one: localhost, 127.0.0.1 (all of 127/8), ::1, ::ffff:127.0.0.1, 0.0.0.0,
  :: and this host's own addresses all reach a server listening on the wildcard, so any of them
  would take over a unit that another spelling is driving. (Two servers on one port, one on
  127.0.0.1 and one on 127.0.0.2, are then taken for one: a refusal, never a takeover.)
- a serial port is its real path, so a symlink (/dev/serial/by-id/...) and its target are one;
  on Windows COM3 and \\\\.\\COM3 are one.
- private units (emu://, loop://, qemu: whose QEMU this process starts), labgrid:// (its coordinator locks; the link it gives claims) and
  usb:// (the kernel's interface claim; the unit's identity follows IDENTITY) have none: None.
"""
from __future__ import annotations

import functools
import ipaddress
import os
import socket
from urllib.parse import urlsplit

PRIVATE_SCHEMES = frozenset({"emu", "loop", "labgrid", "qemu"})
# schemes written without "//" before a path (qemu:build/unit.elf)
OPAQUE_SCHEMES = ("qemu",)
THIS_HOST = "localhost"


def scheme_of(url: str) -> str:
    if "://" in url:
        return url.split("://", 1)[0].lower()
    head = url.split(":", 1)[0].lower()
    return head if head in OPAQUE_SCHEMES and ":" in url else ""


def endpoint_of(url: str) -> str | None:
    """'tcp HOST:PORT' or 'port PATH' for what the URL connects to; None when it has no endpoint."""
    scheme = scheme_of(url)
    if scheme in ("socket", "rfc2217"):
        parts = urlsplit(url)
        try:
            host, port = parts.hostname or "", parts.port
        except ValueError:
            return None
        if not host or port is None:
            return None
        host = host_name(host, port)
        return f"tcp {host}:{port}" if ":" not in host else f"tcp [{host}]:{port}"
    if not scheme:
        return f"port {port_name(url)}"
    return None


def port_name(path: str) -> str:
    if os.name == "nt":
        bare = path[4:] if path.startswith("\\\\.\\") else path
        if bare.upper().startswith("COM"):
            return bare.upper()
    return os.path.realpath(path)


def host_name(host: str, port: int) -> str:
    """The address the host resolves to, or THIS_HOST for any spelling of this host."""
    try:
        address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4][0]
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except (OSError, ValueError):
        return host.lower()         # unresolvable now: the open will fail; the spelling is all there is
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return THIS_HOST if is_this_host(ip) else str(ip)


@functools.lru_cache(maxsize=64)
def is_this_host(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if ip.is_loopback or ip.is_unspecified:
        return True
    # an address can be bound to only where it is one of this host's own
    family = socket.AF_INET if ip.version == 4 else socket.AF_INET6
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.bind((str(ip), 0))
    except OSError:
        return False
    return True
