"""permissions.network patterns: what parses, what each matches, what one covers, and
the Deno --deny-net ranges (every non-global IPv4 range but the addresses listed)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lwtool.capability.hosts import BadPattern, HostPattern, deny_ranges, parse_all, refusal


@pytest.mark.parametrize(("text", "why"), [
    ("*", "every host"), ("*.", "every host"), ("*.com", "top-level"),
    ("https://api.github.com/", "URL"), ("api.github.com/x", "URL"),
    ("api.*.com", "leading"), ("a..b", "not a host"), ("-a.com", "not a host"),
    ("api.github.com:0", "port"), ("api.github.com:70000", "port"),
    ("api.github.com:https", "port"), ("::1", "brackets"), ("[::1", "closing"),
    ("[nothost]", "not an IPv6"), ("*.10.0.0.1", "wildcard"), ("", "non-empty"),
])
def test_what_is_no_host_pattern_is_refused_saying_why(text: str, why: str) -> None:
    with pytest.raises(BadPattern, match=why):
        HostPattern.parse(text)


@pytest.mark.parametrize(("pattern", "host", "port", "matches"), [
    ("api.github.com", "api.github.com", 443, True),
    ("api.github.com", "API.GitHub.com.", 80, True),
    ("api.github.com", "github.com", 443, False),
    ("api.github.com:443", "api.github.com", 80, False),
    ("*.githubusercontent.com", "raw.githubusercontent.com", 443, True),
    ("*.githubusercontent.com", "a.b.githubusercontent.com", 1, True),
    ("*.githubusercontent.com", "githubusercontent.com", 443, True),  # as Deno reads it
    ("*.githubusercontent.com", "evilgithubusercontent.com", 443, False),
    ("*.githubusercontent.com", "githubusercontent.com.evil", 443, False),
    ("127.0.0.1:8080", "127.0.0.1", 8080, True),
    ("[::1]:8080", "[::1]", 8080, True),
    ("[::1]", "0:0:0:0:0:0:0:1", 9, True),
])
def test_a_pattern_matches_its_hosts_only(pattern: str, host: str, port: int,
                                          matches: bool) -> None:
    assert HostPattern.parse(pattern).matches(host, port) is matches


def test_deno_reads_each_pattern_as_lwtool_does() -> None:
    assert [p.deno() for p in parse_all(["API.example.com", "*.example.org:443",
                                         "[::1]:80", "10.0.0.5"])] == [
        "api.example.com", "*.example.org:443", "[::1]:80", "10.0.0.5"]


def test_a_private_address_is_refused_unless_it_is_listed_itself() -> None:
    listed = parse_all(["localhost", "10.1.2.3:5432", "example.com"])
    assert "not in permissions.network" in str(refusal(listed, "other.org", 443))
    assert "resolves to 127.0.0.1" in str(refusal(listed, "localhost", 80))
    assert refusal(listed, "10.1.2.3", 5432) is None
    assert "not in permissions.network" in str(refusal(listed, "10.1.2.3", 22))
    assert refusal(parse_all(["localhost", "127.0.0.1", "[::1]"]), "localhost", 80) is None


def test_deny_ranges_cover_every_private_address_but_the_listed_ones() -> None:
    ranges = [ipaddress.ip_network(r) for r in deny_ranges(parse_all(["127.0.0.1:8080"]))
              if not r.startswith("[")]
    def denied(address: str) -> bool:
        return any(ipaddress.ip_address(address) in r for r in ranges)
    assert not denied("127.0.0.1")
    assert all(denied(a) for a in ("127.0.0.2", "169.254.169.254", "10.0.0.1",
                                   "192.168.1.1", "172.16.0.1", "100.64.0.1", "0.0.0.0"))
    assert not denied("8.8.8.8")
    assert "[::1]" in deny_ranges([]) and "[::1]" not in deny_ranges(parse_all(["[::1]"]))


LABEL = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
NAME = st.lists(LABEL, min_size=2, max_size=4).map(".".join)
PATTERN = st.tuples(st.booleans(), NAME, st.none() | st.integers(1, 65535)).map(
    lambda t: ("*." if t[0] else "") + t[1] + (f":{t[2]}" if t[2] else ""))


@given(PATTERN, PATTERN, NAME, st.integers(1, 65535))
def test_what_a_pattern_covers_it_matches(outer: str, inner: str, host: str,
                                          port: int) -> None:
    """covers() never says more than matches(): a host the inner pattern allows, an
    outer pattern that covers it allows too (the child-within-parent rule rests on it)."""
    a, b = HostPattern.parse(outer), HostPattern.parse(inner)
    if a.covers(b):
        for candidate in (host + "." + b.host, b.host):
            if b.matches(candidate, b.port or port):
                assert a.matches(candidate, b.port or port)
