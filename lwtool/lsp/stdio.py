"""`lwtool lsp` on stdio: the early session answers first (lwtool.lsp.early), then the
pygls server (lwtool.lsp.server) takes over the same streams."""

from __future__ import annotations

import asyncio
import sys
from typing import BinaryIO

from lwtool.lsp.early import EarlySession, frame_writer
from lwtool.lsp.transport import FrameReader, error_message, stdin_chunks


async def session(stdin: BinaryIO, stdout: BinaryIO) -> bool:
    """The whole LSP session on these streams; True when it ended with `shutdown` then
    `exit`."""
    write = frame_writer(stdout)
    # a frame the early reader refuses is answered at once, as the server would
    reader = FrameReader(stdin_chunks(stdin),
                         lambda problem: write(error_message(f"bad frame: {problem}")))
    early = EarlySession(reader, write)
    await early.run()
    from lwtool.lsp.server import server

    return await server.take_over(early, stdout)


def main() -> None:
    """Serve on stdio. The exit code follows LSP: 0 after `shutdown` then `exit`, 1 for
    an `exit` without `shutdown` or the end of the stream."""
    try:
        clean = asyncio.run(session(sys.stdin.buffer, sys.stdout.buffer))
    except (BrokenPipeError, KeyboardInterrupt):
        clean = False
    if not clean:
        raise SystemExit(1)
