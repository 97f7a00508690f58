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
