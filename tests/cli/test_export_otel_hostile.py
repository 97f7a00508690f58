"""`lwtool export-otel` against a hostile collector (hardening round 3): a reply dripped
byte by byte ends at `--timeout`, a 500 MiB gzip bomb is neither read whole nor
decompressed, a redirect is not "exported", an immediate refusal says its status at
once; and token counts past 64 bits are clamped, not a crash."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lwtool.observe.otel import INT64, _clamped
from tests.cli.test_export_otel import _review
from tests.conftest import ROOT, run_cli


def _gzip_bomb(mib: int) -> bytes:
    """`mib` MiB of zeros gzipped, made a MiB at a time (about 500 KiB for 500 MiB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
    chunk = bytes(1 << 20)
    return b"".join([*(packer.compress(chunk) for _ in range(mib)), packer.flush()])


BOMB = _gzip_bomb(500)


@contextmanager
def collector(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A raw loopback HTTP server answering each connection with `answer` (bounded)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                try:
                    _read_request(conn)
                    answer(conn)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(10)
        server.close()


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    while len(body) < length:
        body += conn.recv(65536)


def drip(conn: socket.socket) -> None:
    for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 1000:
        conn.sendall(bytes([byte]))
        time.sleep(0.05)  # 40+ s in all: far past --timeout


def bomb(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: "
                 + str(len(BOMB)).encode() + b"\r\n\r\n" + BOMB)


def redirect(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:9/v1/traces"
                 b"\r\nContent-Length: 0\r\n\r\n")


def refuse(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("otel")
    _review(folder)
    return folder


def _export(data: Path, url: str, timeout: str = "2") -> tuple[subprocess.CompletedProcess[str],
                                                                float]:
    started = time.monotonic()
    done = run_cli("export-otel", "rev", "--data-dir", str(data), "--endpoint", url,
                   "--timeout", timeout)
    return done, time.monotonic() - started


def test_a_dripping_reply_ends_at_the_timeout(data: Path) -> None:
    with collector(drip) as url:
        done, took = _export(data, url)
    assert done.returncode == 2 and "no complete answer within 2s" in done.stderr
    assert took < 12  # interpreter start + 2 s, not the 40 s of the drip


def test_a_gzip_bomb_is_not_decompressed(data: Path) -> None:
    script = ("import sys\nfrom lwtool.cli.entry import main\n"
              "try:\n    main()\nexcept SystemExit:\n"
              "    peak = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]\n"
              "    print(f'rss={peak}', file=sys.stderr)\n    raise\n")
    with collector(bomb) as url:
        done = subprocess.run([sys.executable, "-c", script, "export-otel", "rev",
                               "--data-dir", str(data), "--endpoint", url, "--timeout", "10"],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rss_kib = int(done.stderr.rsplit("rss=", 1)[1].split()[0])
    assert rss_kib < 300 * 1024, rss_kib  # a decompressed reply alone would be 500 MiB


def test_a_redirect_is_not_exported(data: Path) -> None:
    with collector(redirect) as url:
        done, _ = _export(data, url)
    assert done.returncode == 2, done.stderr
    assert "redirected (307) to http://127.0.0.1:9/v1/traces" in done.stderr
    assert "exported" not in done.stderr.replace("not accept", "")


def test_an_immediate_refusal_says_its_status_at_once(data: Path) -> None:
    with collector(refuse) as url:
        done, took = _export(data, url, timeout="10")
    assert done.returncode == 2
    assert "did not accept the spans: HTTP 405 Method Not Allowed" in done.stderr
    assert "within" not in done.stderr and "retrying" not in done.stderr
    assert took < 9


def test_token_counts_past_64_bits_are_clamped() -> None:
    assert _clamped(1 << 80) == INT64[1] and _clamped(-(1 << 80)) == INT64[0]
    assert _clamped(7) == 7 and _clamped(True) is True and _clamped("x") == "x"
