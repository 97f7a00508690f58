"""The local world's artifacts: up to INLINE_ARTIFACT_LIMIT bytes in the database (see
LocalWorld.put_artifact), larger ones as content-addressed files written to a temp
name, fsynced and renamed; read back only as regular files."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lwtool.world.base import ArtifactMissing, StoreDamaged, StoreUnavailable
from lwtool.world.files import NotARegularFile, open_regular
from lwtool.world.local_store import fsync_dir, os_reason, private_new_file

INLINE_ARTIFACT_LIMIT = 256 * 1024
# Content-addressed: an existing row is rewritten only when its bytes differ (damaged).
PUT_INLINE = ("INSERT INTO artifacts VALUES (?, ?) ON CONFLICT(ref) DO UPDATE "
              "SET data = excluded.data WHERE data IS NOT excluded.data")

ARTIFACT_REF = re.compile(r"artifact://sha256:[0-9a-f]{64}")


async def write_file(target: Path, data: bytes, digest: str, durable: bool) -> None:
    """Write to a private temp name, fsync (when durable), rename into place; the temp
    file is removed whatever goes wrong (a full disk must not leave half an artifact
    behind). The rename alone makes a complete file appear to a killed process."""
    import aiofiles
    import aiofiles.os

    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = target.with_name(f".{digest}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        async with aiofiles.open(temp, "wb", opener=private_new_file) as fh:
            await fh.write(data)
            await fh.flush()
            if durable:
                os.fsync(fh.fileno())
        await aiofiles.os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(target.parent)


async def read_file(path: Path) -> bytes:
    """A regular file's bytes; never through a symlink, never a FIFO or device."""
    import aiofiles

    async with aiofiles.open(path, "rb", opener=open_regular) as fh:
        return bytes(await fh.read())


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def artifact_errors(data_dir: Path, ref: str, path: Path) -> Iterator[None]:
    """Reading the file of artifact `ref`: what goes wrong as the world's errors."""
    try:
        yield
    except FileNotFoundError:
        raise ArtifactMissing(f"artifact {ref} is missing from {data_dir}") from None
    except NotARegularFile:
        raise StoreDamaged(f"artifact {ref} is damaged: {path} is not a regular file "
                           "(a link, device or folder)") from None
    except OSError as exc:
        raise StoreUnavailable(f"artifact {ref} cannot be read: {os_reason(exc)}") from None
