"""Which hosts a sandboxed command may reach through the network proxy: the patterns of
`sandbox.network.allowedDomains`, parsed and matched, and which resolved addresses a match may
use. Pure: no I/O, no resolving (the proxy resolves, then asks `address_refusal`).

Patterns: `example.com` (that name only), `*.example.com` (any name below it, not
`example.com` itself), an IP address (`127.0.0.1`, `::1` or `[::1]`: that address only).
Names compare case-insensitively, a trailing dot ignored. A name listed exactly reaches whatever
it resolves to; a name matched by a `*.` pattern reaches public addresses only, so a name someone
points at 127.0.0.1 or 10.0.0.1 cannot reach the host's own services or its private network."""

from __future__ import annotations

import ipaddress
import re
from typing import Iterable

from .fastclass import dataclass

__all__ = ["SETTING", "Allowlist", "Match", "address_refusal", "ip_literal", "normalise_host"]

SETTING = "sandbox.network.allowedDomains"
_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True, slots=True)
class Match:
    """A host the list allows; `exact`: named exactly (a name or an address), so any address
    it resolves to may be used, not only public ones."""

    host: str
    exact: bool


@dataclass(frozen=True, slots=True)
class Allowlist:
    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()  # ".example.com" for "*.example.com"
    addresses: frozenset[IPAddress] = frozenset()

    @classmethod
    def parse(cls, patterns: Iterable[str]) -> Allowlist:
        """Raises ValueError naming the first pattern that is none of the accepted forms."""
        names: set[str] = set()
        suffixes: list[str] = []
        addresses: set[IPAddress] = set()
        for pattern in patterns:
            if not isinstance(pattern, str):
                raise ValueError(f"expected a host name, `*.domain` or an IP address, got {pattern!r}")
            address = ip_literal(pattern.strip())
            if address is not None:
                addresses.add(address)
                continue
            wild = pattern.strip().startswith("*.")
            name = normalise_host(pattern.strip()[2:] if wild else pattern.strip())
            if name is None:
                raise ValueError(f"{pattern!r} is not a host name, `*.domain` or an IP address "
                                 "(no scheme, port, path or other wildcard; e.g. \"pypi.org\", \"*.github.com\")")
            if wild:
                suffixes.append("." + name)
            else:
                names.add(name)
        return cls(frozenset(names), tuple(dict.fromkeys(suffixes)), frozenset(addresses))

    def __bool__(self) -> bool:
        return bool(self.names or self.suffixes or self.addresses)

    def match(self, host: str) -> Match | None:
        """The verdict on `host` as a request names it (a name or an address literal); None
        when the list does not allow it (or it is no valid host at all)."""
        address = ip_literal(host)
        if address is not None:
            return Match(str(address), True) if address in self.addresses else None
        name = normalise_host(host)
        if name is None:
            return None
        if name in self.names:
            return Match(name, True)
        if name.endswith(self.suffixes):
            return Match(name, False)
        return None


def normalise_host(host: str) -> str | None:
    """`host` lower-cased without its trailing dot, or None when it is not a DNS name in ASCII
    (a client sends an international name as `xn--…`). A name whose last label is a number is
    refused too: resolvers read `2130706433` or `127.1` as addresses, which no pattern names."""
    name = host.lower()
    name = name[:-1] if name.endswith(".") else name
    if not name or len(name) > 253:
        return None
    labels = name.split(".")
    if not all(_LABEL.fullmatch(label) for label in labels):
        return None
    last = labels[-1]
    if last.isdigit() or last.startswith("0x"):
        return None
    return name


def address_refusal(address: str, match: Match) -> str | None:
    """Why `match` may not use `address`, one of the addresses its name resolved to; None when
    it may. A wildcard match reaches public addresses only."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return f"it resolves to {address!r}, which is not an address"
    if match.exact or _public(ip):
        return None
    return (f"it resolves to {ip}, a private, loopback or link-local address, which a `*.` pattern does not "
            f"reach; list the name itself in {SETTING} to allow it")


def _public(ip: IPAddress) -> bool:
    if ip.is_multicast or not ip.is_global:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        # addresses that carry an IPv4 one inside: judge that one
        inner = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if inner is None and ip in _NAT64:
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if inner is not None:
            return _public(inner)
    return True


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def ip_literal(text: str) -> IPAddress | None:
    """An IP literal in its usual form (IPv6 with or without brackets); None for anything else."""
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None
