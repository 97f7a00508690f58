"""Opening a store's files safely: a descriptor of a regular file only, never through a
symlink, never a FIFO or device (a store someone edited must not make lwtool follow a
link out of it or block on a pipe)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class NotARegularFile(OSError):
    pass


def open_regular(name: str | Path, flags: int = os.O_RDONLY) -> int:
    """A descriptor of the regular file `name`; NotARegularFile for a symlink, folder,
    FIFO or device. Other OSErrors (missing, no permission) pass through."""
    try:
        fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the file is a symlink
            raise NotARegularFile(str(name)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotARegularFile(str(name))
    return fd


def write_inside(root: str | Path, relative: str, data: bytes) -> None:
    """Write `data` to `root/relative`, making its folders, without following any link
    (each folder is opened with O_NOFOLLOW relative to the one before): a link planted
    anywhere on the way, or a `..`, is NotARegularFile; nothing is written then."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise NotARegularFile(f"{relative}: not a path inside {root}")
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for part in parts[:-1]:
            try:
                os.mkdir(part, 0o700, dir_fd=folder)
            except FileExistsError:
                pass
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                                dir_fd=folder)
            except OSError as exc:
                raise NotARegularFile(f"{relative}: {part} is a link or not a folder") \
                    from exc
            os.close(folder)
            folder = inner
        try:
            fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                         | os.O_NONBLOCK, 0o600, dir_fd=folder)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                raise NotARegularFile(f"{relative}: a link or not a regular file") from exc
            raise
        with os.fdopen(fd, "wb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise NotARegularFile(f"{relative}: not a regular file")
            handle.write(data)
    finally:
        os.close(folder)
