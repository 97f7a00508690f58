"""The packed VS Code extension (editors/vscode) in a real VS Code host: code-server
(VS Code 1.100 in the browser; scripts/install_code_server.sh) driven in Debian's
Chromium. The extension finds the project's `.venv/bin/lwtool` (the extension host's
PATH is the login shell's, not the one code-server was started with), shows `lwtool
lsp`'s findings in the Problems panel with their codes and positions, says when lwtool
cannot be found, naming the `lwtool.command` setting, and starts the server once the
setting is changed in VS Code's own settings editor, without a reload."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.documents import BROKEN, FINDING
from tests.conftest import ROOT

HOST = ROOT / "tests" / "clients" / "vscode-host" / "node_modules" / ".bin" / "code-server"
LWTOOL = Path(sys.executable).parent / "lwtool"


@pytest.fixture(scope="module")
def vsix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extension packed as its publisher packs it."""
    if shutil.which("npm") is None:
        pytest.fail("npm is required to pack the extension (.ci/run installs it)")
    if not HOST.exists():
        why = (f"{HOST} is missing: scripts/bootstrap.sh installs it where npm and ripgrep "
               "are (apt-get install ripgrep; .ci/run does)")
        if os.environ.get("LWTOOL_REQUIRE_BROWSER"):
            pytest.fail(why)
        pytest.skip(why)
    out = tmp_path_factory.mktemp("vsix") / "lwtool-lwir.vsix"
    folder = ROOT / "editors" / "vscode"
    for command in (["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                    ["npx", "vsce", "package", "--no-dependencies", "--out", str(out)]):
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    return out


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture()
def host(tmp_path: Path, vsix: Path) -> Iterator[dict[str, Any]]:
    """code-server with the .vsix installed, on a workspace and user folder of its own
    (workspace trust off: the folder is trusted)."""
    yield from _serve(tmp_path, vsix, trust=False)


@pytest.fixture()
def trusting_host(tmp_path: Path, vsix: Path) -> Iterator[dict[str, Any]]:
    """The same with workspace trust on: VS Code asks whether to trust the folder."""
    yield from _serve(tmp_path, vsix, trust=True)


def _serve(tmp_path: Path, vsix: Path, trust: bool) -> Iterator[dict[str, Any]]:
    user, extensions, workspace = (tmp_path / n for n in ("user", "extensions", "ws"))
    for folder in (user / "User", extensions, workspace):
        folder.mkdir(parents=True)
    common = ["--user-data-dir", str(user), "--extensions-dir", str(extensions)]
    installed = subprocess.run([str(HOST), *common, "--install-extension", str(vsix)],
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    port = _free_port()
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
               "settings": user / "User" / "settings.json"}
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _open_file(page: Any, name: str) -> None:
    """Open a workspace file from the Explorer, as a user clicks it."""
    page.click(f".explorer-folders-view .monaco-list-row[aria-label='{name}']")
    page.wait_for_selector(f".tabs-container .tab[aria-label^='{name}']", timeout=30_000)


def _problems(page: Any, wanted: str, timeout: float = 60) -> str:
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


def _workbench(browser: Any, url: str, trust: str | None = None) -> Any:
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


def test_findings_reach_the_problems_panel_from_the_project_venv(
        browser: Any, host: dict[str, Any]) -> None:
    workspace: Path = host["workspace"]
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "bin" / "lwtool").symlink_to(LWTOOL)
    (workspace / "flow.workflow.yaml").write_text(BROKEN)
    page = _workbench(browser, host["url"])
    try:
        _open_file(page, "flow.workflow.yaml")
        text = _problems(page, FINDING)
        assert "step.unknown_type" in text and "[Ln 7, Col 11]" in text
    finally:
        page.close()


# Typed into VS Code's settings editor: no auto-closing to fight.
PLAIN_TYPING = {"editor.autoClosingBrackets": "never", "editor.autoClosingQuotes": "never"}


def test_lwtool_not_found_is_said_and_a_changed_setting_starts_it(
        browser: Any, host: dict[str, Any]) -> None:
    host["settings"].write_text(json.dumps({"lwtool.command": ["/nowhere/lwtool", "lsp"],
                                            **PLAIN_TYPING}))
    (host["workspace"] / "flow.workflow.yaml").write_text(BROKEN)
    page = _workbench(browser, host["url"])
    try:
        _open_file(page, "flow.workflow.yaml")
        toast = page.wait_for_selector(".notifications-toasts .notification-list-item-message",
                                       timeout=60_000)
        assert toast is not None
        message = toast.inner_text()
        assert "lwtool was not found" in message and "lwtool.command" in message, message
        # the user fixes the setting in VS Code: the server starts, no reload
        page.keyboard.press("F1")
        page.wait_for_selector(".quick-input-widget", state="visible")
        page.keyboard.insert_text("Preferences: Open User Settings (JSON)")
        page.wait_for_selector(".quick-input-list .monaco-list-row", timeout=30_000)
        page.keyboard.press("Enter")
        page.wait_for_selector(".tabs-container .tab[aria-label^='settings.json']",
                               timeout=30_000)
        page.wait_for_timeout(500)  # the editor takes the focus once it is shown
        page.locator(".editor-group-container.active .monaco-editor .view-lines").click()
        page.keyboard.press("Control+A")
        page.keyboard.press("Delete")
        page.keyboard.insert_text(json.dumps({"lwtool.command": [str(LWTOOL), "lsp"],
                                              **PLAIN_TYPING}))
        page.keyboard.press("Control+S")
        assert "step.unknown_type" in _problems(page, FINDING)
        assert json.loads(host["settings"].read_text())["lwtool.command"][0] == str(LWTOOL)
    finally:
        page.close()


# A program a cloned repository ships and names in its own .vscode/settings.json.
EVIL = """#!/bin/sh
touch "$(dirname "$0")/ran"
exec "$(dirname "$0")/.venv/bin/lwtool" "$@"
"""


def test_an_untrusted_folder_never_runs_its_own_program(
        browser: Any, trusting_host: dict[str, Any]) -> None:
    """In restricted mode the extension starts no program of the folder's (its .venv, a
    command its settings name) and says why; trusted, it starts the folder's .venv
    lwtool, and the folder's own `lwtool.command` is still never read."""
    workspace: Path = trusting_host["workspace"]
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "bin" / "lwtool").symlink_to(LWTOOL)
    (workspace / "evil.sh").write_text(EVIL)
    (workspace / "evil.sh").chmod(0o755)
    (workspace / ".vscode").mkdir()
    (workspace / ".vscode" / "settings.json").write_text(json.dumps(
        {"lwtool.command": [str(workspace / "evil.sh"), "lsp"]}))
    (workspace / "flow.workflow.yaml").write_text(BROKEN)
    page = _workbench(browser, trusting_host["url"], trust="No, I don't trust the authors")
    try:
        _open_file(page, "flow.workflow.yaml")
        toast = page.wait_for_selector(
            ".notifications-toasts .notification-list-item-message >> text=lwtool is off",
            timeout=60_000)
        assert toast is not None
        message = toast.inner_text()
        assert "you have not trusted it" in message and ".venv/bin/lwtool" in message, message
        assert not (workspace / "ran").exists()
        # trusted now: the folder's .venv lwtool starts, without a reload
        page.keyboard.press("F1")
        page.wait_for_selector(".quick-input-widget", state="visible")
        page.keyboard.insert_text("Workspaces: Manage Workspace Trust")
        page.wait_for_selector(".quick-input-list .monaco-list-row", timeout=30_000)
        page.keyboard.press("Enter")
        page.click(".workspace-trust-editor .monaco-button >> text=Trust", timeout=30_000)
        assert "step.unknown_type" in _problems(page, FINDING)
        assert not (workspace / "ran").exists()
    finally:
        page.close()
