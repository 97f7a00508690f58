"""Values of `sensitive: true` steps: never inline in an event, stored as sealed
artifacts, hashed with the world's key.

A sealed artifact is MAGIC, the world's key and the value's bytes: its content address
(what events name, `outputRef`, `inputRef`, ...) is then a keyed hash, which cannot be
brute-forced back to a short value by whoever sees only the events, a report or an OTel
export. The inspector, `lwtool mcp` and `events` show a placeholder for it; `lwtool
reveal` reads one back and records that it did (a SensitiveValueRead event). Replays
read the value from the artifact: the inline copy is never load-bearing (the spec).
"""

from __future__ import annotations

import hashlib
from typing import Any

from lwtool.canonical.compact import dumps_bytes, loads

MAGIC = b"lwtool-sensitive/1\n"
PLACEHOLDER = "(sensitive: kept out of the log; `lwtool reveal RUN STEP` reads it)"
READ_EVENT = "SensitiveValueRead"


def seal(key: bytes, value: Any) -> bytes:
    return MAGIC + key + dumps_bytes(value)


def seal_bytes(key: bytes, data: bytes) -> bytes:
    """Raw bytes (a prompt's text, a sandbox log) sealed as they are."""
    return MAGIC + key + data


def sealed(data: bytes) -> bool:
    return data.startswith(MAGIC)


def unseal(data: bytes, key_bytes: int = 32) -> Any:
    """The value of a sealed artifact's bytes."""
    return loads(data[len(MAGIC) + key_bytes:])


def keyed_hash(key: bytes, value: Any) -> str:
    """A sensitive value's hash for events (inputHash, promptHash)."""
    return "sha256:" + hashlib.sha256(key + dumps_bytes(value)).hexdigest()
