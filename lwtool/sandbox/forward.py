"""Inside a confined tool's sandbox (no network but its own loopback): listen on
127.0.0.1:PORT, then run the program (exec: it keeps stdin and stdout, an MCP server's
channel) while a forked child pipes each connection to the egress proxy's unix socket
outside (lwtool.sandbox.egress). `python forward.py SOCKET PORT PROGRAM ARGS...`; the
standard library only, so it starts in milliseconds. The listener exists before the
program starts: its first request finds the proxy."""

from __future__ import annotations

import os
import socket
import sys
import threading


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _serve(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
    _pipe(upstream, client)


def main(path: str, port: int, program: list[str]) -> None:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() != 0:
        listener.close()
        os.execvp(program[0], program)
    quiet = os.open(os.devnull, os.O_RDWR)  # the program's channel is not ours
    for fd in (0, 1):
        os.dup2(quiet, fd)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_serve, args=(client, path), daemon=True).start()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
