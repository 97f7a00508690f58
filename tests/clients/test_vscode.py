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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.documents import BROKEN, FINDING
from tests.clients.vscode_host import (
    LWTOOL,
    HostMissing,
    open_file,
    pack_vsix,
    problems,
    serve,
    workbench,
)


@pytest.fixture(scope="module")
def vsix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extension packed as its publisher packs it."""
    try:
        return pack_vsix(tmp_path_factory.mktemp("vsix") / "lwtool-lwir.vsix")
    except HostMissing as missing:
        if os.environ.get("LWTOOL_REQUIRE_BROWSER"):
            pytest.fail(str(missing))
        pytest.skip(str(missing))


@pytest.fixture()
def host(tmp_path: Path, vsix: Path) -> Iterator[dict[str, Any]]:
    """code-server with the .vsix installed, on a workspace and user folder of its own
    (workspace trust off: the folder is trusted)."""
    with serve(tmp_path, vsix, trust=False) as served:
        yield served


@pytest.fixture()
def trusting_host(tmp_path: Path, vsix: Path) -> Iterator[dict[str, Any]]:
    """The same with workspace trust on: VS Code asks whether to trust the folder."""
    with serve(tmp_path, vsix, trust=True) as served:
        yield served


def test_findings_reach_the_problems_panel_from_the_project_venv(
        browser: Any, host: dict[str, Any]) -> None:
    workspace: Path = host["workspace"]
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "bin" / "lwtool").symlink_to(LWTOOL)
    (workspace / "flow.workflow.yaml").write_text(BROKEN)
    page = workbench(browser, host["url"])
    try:
        open_file(page, "flow.workflow.yaml")
        text = problems(page, FINDING)
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
    page = workbench(browser, host["url"])
    try:
        open_file(page, "flow.workflow.yaml")
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
        assert "step.unknown_type" in problems(page, FINDING)
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
    page = workbench(browser, trusting_host["url"], trust="No, I don't trust the authors")
    try:
        open_file(page, "flow.workflow.yaml")
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
        assert "step.unknown_type" in problems(page, FINDING)
        assert not (workspace / "ran").exists()
    finally:
        page.close()


def test_a_json_workflows_structural_error_is_shown_once(browser: Any,
                                                          host: dict[str, Any]) -> None:
    """VS Code's JSON service and lwtool both read a `*.lwir.json` file: the extension's
    schema association gives completion and hover only (schemas/editor/), so an unknown
    field is one problem, lwtool's (it was two: VS Code's "Property ... is not
    allowed" too)."""
    workspace: Path = host["workspace"]
    (workspace / ".venv" / "bin").mkdir(parents=True)
    (workspace / ".venv" / "bin" / "lwtool").symlink_to(LWTOOL)
    document = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
                "metadata": {"name": "j"}, "permissions": {"tools": ["t"]},
                "colour": "red",
                "steps": [{"id": "a", "uses": "tool.call", "with": {"tool": "t"}}]}
    (workspace / "flow.lwir.json").write_text(json.dumps(document, indent=2))
    page = workbench(browser, host["url"])
    try:
        open_file(page, "flow.lwir.json")
        problems(page, "lwir.invalid_field")
        page.wait_for_timeout(3000)  # time for VS Code's own JSON validation to report
        text = page.inner_text(".markers-panel")
        assert text.count("colour") == 1 and "is not allowed" not in text, text
    finally:
        page.close()
