"""`permissions.network`: the hosts a workflow's executors may connect to.

A pattern is `HOST` or `HOST:PORT`. HOST is a DNS name (`api.github.com`), a wildcard
`*.NAME` (NAME itself and every name under it, as Deno's `--allow-net` reads it), an
IPv4 address or a bracketed IPv6 one (`[::1]`). Without a port every port is allowed.
A bare `*`, a wildcard over a top-level name (`*.com`), a scheme or a path is refused.

Private, loopback, link-local and other non-global addresses are refused unless the
address itself is listed, also when an allowed name resolves to one (DNS rebinding to
169.254.169.254, the cloud metadata service, is the known escape).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass

_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
# IPv4 ranges that are not the internet: what a listed name must never resolve to
NON_GLOBAL_V4 = ("0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8",
                 "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16",
                 "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4")
# Deno's --deny-net takes IPv6 addresses only (no ranges): the loopback and the any
# address; other non-global IPv6 ranges are refused by lwtool's own checks only.
NON_GLOBAL_V6 = ("::1", "::")


class ConnectionDenied(Exception):
    """A confined tool tried to reach hosts permissions.network refuses (`targets`,
    host:port each): its step fails with capability_denied."""

    def __init__(self, targets: list[str], what: str = "the tool") -> None:
        self.targets = targets
        super().__init__(f"{what} tried to connect to {', '.join(targets)}, which "
                         "permissions.network does not allow")


class BadPattern(ValueError):
    """A `permissions.network` entry that is not a host pattern; the message says why."""


@dataclass(frozen=True)
class HostPattern:
    host: str  # lowercase; an IPv6 address without brackets
    port: int | None = None
    wildcard: bool = False  # `*.host`: host and every name under it

    @classmethod
    def parse(cls, text: str) -> HostPattern:
        if not isinstance(text, str) or not text.strip():
            raise BadPattern("a host pattern is a non-empty string like 'api.example.com' "
                             "or '*.example.com:443'")
        raw = text.strip().lower()
        if "://" in raw or "/" in raw:
            raise BadPattern(f"'{text}' is a URL or path; give the host alone "
                             "(e.g. 'api.example.com:443')")
        host, port = _split_port(raw, text)
        if host == "*" or host == "*.":
            raise BadPattern(f"'{text}' allows every host; list the hosts the workflow needs")
        wildcard = host.startswith("*.")
        if wildcard:
            host = host[2:]
            if "." not in host:
                raise BadPattern(f"'{text}' allows a whole top-level domain; "
                                 "name the domain (e.g. '*.example.com')")
        if "*" in host:
            raise BadPattern(f"'{text}': a wildcard is allowed only as a leading '*.'")
        address = _address(host)
        if address is not None:
            if wildcard:
                raise BadPattern(f"'{text}': an address cannot have a wildcard")
            return cls(str(address), port)
        if not _NAME.fullmatch(host):
            raise BadPattern(f"'{text}' is not a host name, an IPv4 address or a "
                             "bracketed IPv6 address")
        return cls(host, port, wildcard)

    @property
    def address(self) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
        return _address(self.host)

    def matches(self, host: str, port: int | None) -> bool:
        if self.port is not None and port != self.port:
            return False
        host = _bare(host.lower().rstrip("."))
        if self.wildcard:
            return host == self.host or host.endswith("." + self.host)
        address = _address(host)
        if address is not None and self.address is not None:
            return address == self.address
        return host == self.host

    def covers(self, other: HostPattern) -> bool:
        """Every host and port `other` allows, this allows too."""
        if self.port is not None and other.port != self.port:
            return False
        if self.wildcard:
            return other.host == self.host or other.host.endswith("." + self.host)
        return not other.wildcard and other.host == self.host

    def deno(self) -> str:
        """The pattern as Deno's --allow-net reads it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        host = f"*.{host}" if self.wildcard else host
        return f"{host}:{self.port}" if self.port is not None else host

    def __str__(self) -> str:
        return self.deno()


def parse_all(texts: Iterable[str]) -> list[HostPattern]:
    return [HostPattern.parse(t) for t in texts]


def allows(patterns: Iterable[HostPattern], host: str, port: int | None) -> bool:
    return any(p.matches(host, port) for p in patterns)


def listed_addresses(patterns: Iterable[HostPattern]
                     ) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    return {a for a in (p.address for p in patterns) if a is not None}


def non_global(address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return not ip.is_global


def refusal(patterns: list[HostPattern], host: str, port: int | None,
            resolve: bool = True) -> str | None:
    """Why a connection to host:port is refused under `patterns`, or None. With
    `resolve`, a name is looked up and each of its addresses checked too."""
    where = f"{host}:{port}" if port is not None else host
    if not allows(patterns, host, port):
        listed = ", ".join(str(p) for p in patterns) or "none"
        return f"{where} is not in permissions.network (allowed: {listed})"
    addresses_listed = listed_addresses(patterns)
    literal = _address(_bare(host))
    addresses = [literal] if literal is not None else \
        (_resolved(host, port) if resolve else [])
    for address in addresses:
        if non_global(address) and address not in addresses_listed:
            return (f"{where} resolves to {address}, a private, loopback or link-local "
                    "address; list the address itself in permissions.network to allow it")
    return None


def deny_ranges(patterns: Iterable[HostPattern]) -> list[str]:
    """Deno --deny-net entries: every non-global IPv4 range but the addresses listed
    (Deno checks what a name resolves to against them), and the IPv6 loopback and any
    address unless listed."""
    listed = listed_addresses(patterns)
    ranges = [ipaddress.IPv4Network(r) for r in NON_GLOBAL_V4]
    for address in listed:
        if isinstance(address, ipaddress.IPv4Address):
            one = ipaddress.IPv4Network(address)
            ranges = [part for r in ranges
                      for part in (r.address_exclude(one) if address in r else (r,))]
    v6 = [f"[{a}]" for a in NON_GLOBAL_V6 if ipaddress.ip_address(a) not in listed]
    return sorted(str(r) for r in ranges) + v6


def _split_port(raw: str, text: str) -> tuple[str, int | None]:
    if raw.startswith("["):
        end = raw.find("]")
        if end < 0:
            raise BadPattern(f"'{text}': an IPv6 address needs its closing ']'")
        host, rest = raw[1:end], raw[end + 1:]
        if _address(host) is None:
            raise BadPattern(f"'{text}': '{host}' is not an IPv6 address")
        if not rest:
            return host, None
        if not rest.startswith(":"):
            raise BadPattern(f"'{text}': expected ':PORT' after ']'")
        return host, _port(rest[1:], text)
    if raw.count(":") > 1:
        raise BadPattern(f"'{text}': write an IPv6 address in brackets, e.g. '[::1]:8080'")
    host, colon, port = raw.partition(":")
    return host, (_port(port, text) if colon else None)


def _port(text: str, whole: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise BadPattern(f"'{whole}': the port must be a number from 1 to 65535")
    return int(text)


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _bare(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _resolved(host: str, port: int | None
              ) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return []  # the connection itself will fail and say so
    found = []
    for info in infos:
        address = _address(str(info[4][0]).split("%")[0])
        if address is not None:
            found.append(address)
    return found
