"""What lwtool says of a PostgreSQL URL: the server it names (host, port, database) and
a driver's error as one line, never the URL's password."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from lwtool.world.base import StoreUnavailable


def where(url: str) -> str:
    """The server a URL names, for messages: host, port and database, never its user
    or password. StoreUnavailable for a URL that names no server lwtool can read."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "the local socket", parts.port or 5432
    except ValueError as exc:  # `[::1/db`, a port out of range: urllib's words name neither
        raise StoreUnavailable(f"the PostgreSQL URL is not valid: {exc}") from None
    return f"{host}:{port}{parts.path or ''}"


def secrets_of(url: str) -> list[str]:
    """What a message about `url` must never show: its password, as written and
    decoded, in the user part or as the query's `password=`."""
    parts = urlsplit(url)
    password = parts.netloc.rpartition("@")[0].partition(":")[2]
    found = [password, unquote(password)]
    for pair in parts.query.split("&"):
        key, _, value = pair.partition("=")
        if unquote(key) == "password":
            found += [value, unquote(value)]
    return sorted({s for s in found if s}, key=len, reverse=True)


def reason_of(exc: Exception, secrets: list[str]) -> str:
    """A driver error as one line (the server's own words, without the DETAIL/HINT),
    with each of `secrets` (secrets_of) shown as `***`."""
    text = str(exc).strip().splitlines()
    return _hidden(text[0] if text else type(exc).__name__, secrets)


def without_password(url: str) -> str:
    """`url` with its password (user part and `?password=`) shown as `***`: to print a
    command that names the world."""
    return _hidden(url, secrets_of(url))


def _hidden(text: str, secrets: list[str]) -> str:
    """`text` with each of `secrets` (longest first, as secrets_of orders them) `***`."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
