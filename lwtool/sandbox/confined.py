"""Running a tool confined (`--confine-tools`): a Python tool's call or a stdio MCP
server inside bubblewrap with no network of its own; its only way out is the egress
proxy (lwtool.sandbox.egress), reached through a forwarder on the sandbox's loopback
(lwtool.sandbox.forward) that HTTP_PROXY / HTTPS_PROXY name. The file system is the
host's, read-only (a project or its virtualenv under /tmp stays visible), with the
working folder and a temporary folder of its own (TMPDIR, beside the proxy's socket)
writable; the process runs as an unprivileged user with no capabilities and dies with
lwtool.

What it holds: every connection an HTTP client makes through the proxy variables goes
to `permissions.network` only (names resolving to private addresses refused); a client
that ignores them, or raw sockets, reach nothing at all."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lwtool.sandbox.bwrap import namespace_args

PROXY_PORT = 3128
_FORWARD = str(Path(__file__).with_name("forward.py"))


def confined_argv(argv: list[str], socket_path: str, cwd: str | None = None) -> list[str]:
    """`argv` inside bubblewrap, its network the proxy at `socket_path`."""
    where = cwd or os.getcwd()
    proxy = f"http://127.0.0.1:{PROXY_PORT}"
    env: list[str] = []
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY",
                 "all_proxy"):
        env += ["--setenv", name, proxy]
    own = str(Path(socket_path).parent)  # the proxy's private folder: TMPDIR too
    env += ["--setenv", "NO_PROXY", "", "--setenv", "no_proxy", "", "--setenv", "TMPDIR", own]
    return ["bwrap", *namespace_args(), "--die-with-parent", "--ro-bind", "/", "/",
            "--dev", "/dev", "--proc", "/proc", "--bind", own, own,
            "--bind", where, where, "--chdir", where, *env,
            sys.executable, "-S", _FORWARD, socket_path, str(PROXY_PORT), *argv]
