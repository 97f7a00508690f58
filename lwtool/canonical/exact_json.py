"""orjson for exact JSON values only. orjson writes a date, a dataclass or a subclass of
str, int, dict or list as JSON of its own; with these options each goes to `refuse`
instead, which raises TypeError (as orjson does for an integer beyond 64 bits, a key that
is not text or a lone surrogate), so the caller takes its slower, exact path:

    orjson.dumps(value, default=refuse, option=EXACT)  # | orjson.OPT_SORT_KEYS

An enum member, which orjson writes as its value, is not refused: JSON values hold none.
EXACT is 0 on a base install without orjson (validate, check, lsp); its callers look
for orjson themselves.
"""

from __future__ import annotations

from typing import Any

try:
    import orjson
except ImportError:  # a base install: the standard library alone
    orjson = None  # type: ignore[assignment]

EXACT = 0 if orjson is None else (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS)


def refuse(value: Any) -> Any:
    """orjson's `default`: nothing but exact JSON types is written."""
    raise TypeError(type(value).__name__)
