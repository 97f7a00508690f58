"""A real VS Code host for the extension's tests and bench/vscode.py: code-server (VS
Code 1.100 in the browser; scripts/install_code_server.sh), the extension packed as its
publisher packs it and installed there, and what a user does in its workbench (open a
file from the Explorer, read the Problems panel)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

HOST = ROOT / "tests" / "clients" / "vscode-host" / "node_modules" / ".bin" / "code-server"
LWTOOL = Path(sys.executable).parent / "lwtool"


class HostMissing(Exception):
    """npm or code-server is not installed here; the message says how to get it."""


def pack_vsix(out: Path) -> Path:
    """The extension packed into `out` (a .vsix path) as its publisher packs it."""
    if shutil.which("npm") is None:
        raise HostMissing("npm is required to pack the extension (.ci/run installs it)")
    if not HOST.exists():
        raise HostMissing(f"{HOST} is missing: scripts/bootstrap.sh installs it where npm "
                          "and ripgrep are (apt-get install ripgrep; .ci/run does)")
    folder = ROOT / "editors" / "vscode"
    for command in (["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                    ["npx", "vsce", "package", "--no-dependencies", "--out", str(out)]):
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    return out


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serve(tmp_path: Path, vsix: Path, trust: bool) -> Iterator[dict[str, Any]]:
    """code-server with `vsix` installed, on a workspace and user folder of its own in
    `tmp_path`; with `trust`, workspace trust is on (VS Code asks whether to trust the
    folder). Yields {url, workspace, settings (the user's settings.json), logs}."""
    user, extensions, workspace = (tmp_path / n for n in ("user", "extensions", "ws"))
    for folder in (user / "User", extensions, workspace):
        folder.mkdir(parents=True)
    common = ["--user-data-dir", str(user), "--extensions-dir", str(extensions)]
    installed = subprocess.run([str(HOST), *common, "--install-extension", str(vsix)],
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    port = free_port()
    (tmp_path / "config.yaml").write_text("")  # not the user's ~/.config/code-server
    log = (tmp_path / "code-server.log").open("wb")
    server = subprocess.Popen(
        [str(HOST), *common, "--config", str(tmp_path / "config.yaml"), "--auth", "none",
         "--bind-addr", f"127.0.0.1:{port}",
         "--disable-telemetry", "--disable-update-check",
         *(() if trust else ("--disable-workspace-trust",)),
         str(workspace)], stdout=log, stderr=subprocess.STDOUT)  # a pipe would fill up
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
            break
        except OSError:
            assert time.monotonic() < deadline, "code-server did not start"
            assert server.poll() is None, (tmp_path / "code-server.log").read_text()
            time.sleep(0.2)
    try:
        yield {"url": f"http://127.0.0.1:{port}/?folder={workspace}", "workspace": workspace,
               "settings": user / "User" / "settings.json", "logs": user / "logs"}
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def open_file(page: Any, name: str) -> None:
    """Open a workspace file from the Explorer, as a user clicks it."""
    page.click(f".explorer-folders-view .monaco-list-row[aria-label='{name}']")
    page.wait_for_selector(f".tabs-container .tab[aria-label^='{name}']", timeout=30_000)


def problems(page: Any, wanted: str, timeout: float = 60) -> str:
    """The Problems panel's text once it shows `wanted` (opened from the status bar's
    problem counts)."""
    page.click("#status\\.problems")
    page.wait_for_selector(".markers-panel", state="visible", timeout=30_000)
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = page.inner_text(".markers-panel")
        if wanted in text:
            return text
        page.wait_for_timeout(250)
    raise AssertionError(f"the Problems panel never showed {wanted!r}: {text!r}")


def workbench(browser: Any, url: str, trust: str | None = None) -> Any:
    """The workbench on `url`; `trust` is the answer to click in the workspace trust
    dialog (with trust on)."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(url)
    page.wait_for_selector(".monaco-workbench .part.editor", timeout=60_000)
    if trust is not None:
        page.click(f".monaco-dialog-box .monaco-button >> text={trust}", timeout=60_000)
    # the workspace is loaded once the Explorer lists it
    page.wait_for_selector(".explorer-folders-view .monaco-list-row", timeout=60_000)
    return page


