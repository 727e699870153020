"""Address classes, and the rule that a registry cannot send set-image somewhere more private.

Three classes, from the most private: loopback (this machine: 127.0.0.0/8, ::1, and the unspecified
address, which connects here too), private (everything that is not on the public internet: RFC 1918,
link-local and cloud metadata at 169.254.169.254, CGNAT, ULA, multicast, reserved ranges), public. A
name has the class of the most private address it resolves to, so ``localhost`` or any name that
resolves to 127.0.0.1 is loopback, whatever it looks like.

A ``Floor`` says the least public class a connection may reach. Connections are checked where they are
made, on the addresses actually resolved, so a name that resolves differently the second time (DNS
rebinding) is caught too.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum

from krmfn.net.errors import Refused, Unreachable


class AddressClass(IntEnum):
    LOOPBACK = 0
    PRIVATE = 1
    PUBLIC = 2

    def __str__(self) -> str:
        return self.name.lower()


def address_class(ip: str) -> AddressClass:
    """The class of one IP address (text as ``getaddrinfo`` gives it; a zone ``%eth0`` is ignored)."""
    try:
        address = ipaddress.ip_address(ip.partition("%")[0])
    except ValueError:
        return AddressClass.PRIVATE  # not an address we can place: never treated as public
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback or address.is_unspecified:
        return AddressClass.LOOPBACK
    public = address.is_global and not address.is_multicast
    return AddressClass.PUBLIC if public else AddressClass.PRIVATE


def class_of(ips: Iterable[str]) -> AddressClass:
    """The class of a name: that of the most private address it resolves to."""
    return min((address_class(ip) for ip in ips), default=AddressClass.PRIVATE)


@dataclass(frozen=True)
class Resolved:
    """One address a name resolves to: ``ip`` is what is classified, ``sockaddr`` what is connected to
    (the same in production; tests point a public-looking address at a loopback server)."""

    family: int
    ip: str
    sockaddr: tuple[object, ...]


Resolver = Callable[[str, int], list[Resolved]]


def resolve(host: str, port: int) -> list[Resolved]:
    """``getaddrinfo`` for a TCP connection; ``Unreachable`` when the name does not resolve."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError):
        raise Unreachable(f"the name {host} does not resolve") from None
    return [Resolved(family, str(sockaddr[0]), tuple(sockaddr)) for family, _, _, _, sockaddr in infos]


class Floor:
    """The least public class connections may reach; ``None`` until the first connection sets it (the
    registry's own class), when ``from_first`` is true."""

    def __init__(self, lowest: AddressClass | None = None, *, what: str = "") -> None:
        self.lowest = lowest
        self.what = what

    def check(self, host: str, found: list[Resolved]) -> AddressClass:
        cls = class_of(r.ip for r in found)
        if self.lowest is None:
            self.lowest = cls
        elif cls < self.lowest:
            origin = self.what or "where the request came from"
            raise Refused(f"{host} resolves to a {cls} address, more private than {origin} ({self.lowest})")
        return cls
