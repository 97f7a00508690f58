"""RFC 8785 canonical JSON (the rfc8785 library does the work)."""

from __future__ import annotations

from typing import Any

import rfc8785


class NotCanonicalizable(ValueError):
    """The value has no RFC 8785 form (e.g. an integer beyond ±2**53, a non-string key)."""


def canonical_bytes(value: Any) -> bytes:
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise NotCanonicalizable(str(exc) or type(exc).__name__) from None


def canonical_text(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")
