"""What the PostgreSQL world's modules share: advisory lock keys (a run's, a worker's, a
model's places) and the size of an artifact's chunks."""

from __future__ import annotations

import hashlib

CHUNK = 1024 * 1024  # an artifact's bytes are stored in chunks of this size


def advisory_key(text: str) -> int:
    """`text` as a signed 64-bit advisory lock key (the first 8 bytes of its SHA-256)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def run_lock_key(run_id: str) -> int:
    """A run id as an advisory lock key."""
    return advisory_key(f"lwtool-run:{run_id}")
