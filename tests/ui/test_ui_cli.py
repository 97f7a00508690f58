"""`lwtool ui` as a command: it listens on 127.0.0.1 only, says where, stops cleanly on
SIGTERM (exit 143, like every command), and refuses a data dir without runs or a port in use."""

from __future__ import annotations

import signal
import socket
import urllib.request
from pathlib import Path

from tests.conftest import run_cli
from tests.ui.test_ui_browser import start_inspector


def _listening_addresses(port: int) -> list[str]:
    """Local addresses of the IPv4 and IPv6 sockets listening on `port` (/proc/net)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if int(hex_port, 16) == port and state == "0A":  # LISTEN
                found.append(address)
    return found


def test_it_serves_on_loopback_only_and_stops_on_sigterm(demo_dir: Path) -> None:
    proc, url = start_inspector(demo_dir)
    try:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        assert _listening_addresses(port) == ["0100007F"]  # 127.0.0.1, nothing else
        with urllib.request.urlopen(url, timeout=30) as reply:
            assert reply.status == 200 and b"demo-review" in reply.read()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    assert proc.stderr is not None
    rest = proc.stderr.read()
    # after uvicorn's graceful shutdown, SIGTERM ends it as it ends every lwtool command
    assert code == 143 and rest == "lwtool: terminated\n", rest


def test_refusals(tmp_path: Path, demo_dir: Path) -> None:
    empty = run_cli("ui", "--data-dir", str(tmp_path / "nothing"))
    assert empty.returncode == 2 and "no lwtool data in" in empty.stderr
    assert not (tmp_path / "nothing").exists()
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        busy = run_cli("ui", "--data-dir", str(demo_dir), "--port", str(port))
    finally:
        taken.close()
    assert busy.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in busy.stderr
    assert "--port 0 for any free one" in busy.stderr
