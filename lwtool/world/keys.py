"""A world's own key for sensitive values: 32 random bytes made the first time a
sensitive step needs them and kept with the world (a local data dir's `sensitive.key`,
mode 0600; the PostgreSQL world's `lwtool.meta` row `sensitive_key`). Hashes of a
sensitive step's values are keyed with it, so a hash that travels (an event, a report,
an OTel span) cannot be brute-forced back to a short value without the world."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

KEY_BYTES = 32
KEY_FILE = "sensitive.key"


def local_key(data_dir: Path) -> bytes:
    """The data dir's key, made (exclusively: two processes agree) when it is missing."""
    path = data_dir / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
            os.fsync(fd)
        finally:
            os.close(fd)
    for _ in range(100):  # another process made it a moment ago: wait for its bytes
        key = path.read_bytes()
        if len(key) == KEY_BYTES:
            return key
        import time

        time.sleep(0.01)
    raise OSError(f"{path} is not a key of {KEY_BYTES} bytes; remove it to make a new one "
                  "(its sensitive values' hashes then change)")


def postgres_key(pool: Any) -> bytes:
    """The database's key (the first process to ask makes it)."""
    with pool.connection() as conn, conn.transaction():
        conn.execute("INSERT INTO lwtool.meta VALUES ('sensitive_key', %s) "
                     "ON CONFLICT (key) DO NOTHING", (secrets.token_hex(KEY_BYTES),))
        row = conn.execute("SELECT value FROM lwtool.meta WHERE key = 'sensitive_key'"
                           ).fetchone()
    return bytes.fromhex(row[0])
