"""What `validate` says about the capability firewall: expressions cannot read secrets
or the environment, a model step takes no secret grant, a child may not reach secrets
or hosts its parent does not list, and with `--tools` a tool lwtool cannot hold to
permissions.network is named."""

from __future__ import annotations

import json
from pathlib import Path

from lwtool.source.loader import load_text
from lwtool.validate.run import validate_document
from tests.conftest import run_cli

HEAD = "apiVersion: littleworkflow.dev/v0.1\nkind: Workflow\nmetadata: {name: w}\n"


def _codes(text: str) -> list[tuple[str, str]]:
    return [(f.code, f.pointer) for f in validate_document(load_text(HEAD + text, "w.yaml"))]


def test_expressions_cannot_read_secrets_or_the_environment() -> None:
    found = _codes("permissions: {tools: [t], secrets: [GITHUB_TOKEN]}\nsteps:\n"
                   "  - id: a\n    uses: tool.call\n    secrets: [GITHUB_TOKEN]\n"
                   "    with: {tool: t, args: {x: '{{ secrets.GITHUB_TOKEN }}', "
                   "y: '{{ env.HOME }}'}}\n")
    assert found == [("expr.unknown_root", "/steps/0/with/args/x"),
                     ("expr.unknown_root", "/steps/0/with/args/y")]


def test_a_model_step_is_never_granted_a_secret() -> None:
    found = _codes("permissions: {models: [m], secrets: [K]}\nsteps:\n"
                   "  - {id: a, uses: ai.generate, secrets: [K], with: {model: m, prompt: hi}}\n")
    assert found == [("lwir.invalid_field", "/steps/0/secrets")]


def _child(folder: Path, permissions: dict[str, object]) -> None:
    (folder / "child.lwir.json").write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "child"}, "permissions": {"tools": ["t"], **permissions},
        "steps": [{"id": "s", "uses": "tool.call", "with": {"tool": "t"}}]}))


def test_a_child_reaches_no_secret_or_host_its_parent_does_not_list(tmp_path: Path) -> None:
    _child(tmp_path, {"secrets": ["DB_PASSWORD"], "network": ["api.example.com:443",
                                                               "db.internal"]})
    parent = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
              "metadata": {"name": "parent"},
              "permissions": {"tools": ["t"], "network": ["*.example.com"]},
              "steps": [{"id": "call", "uses": "workflow.invoke",
                         "with": {"workflow": "./child.lwir.json", "input": {}}}]}
    (tmp_path / "parent.lwir.json").write_text(json.dumps(parent))
    done = run_cli("validate", "parent.lwir.json", "--format", "json", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    messages = [f["message"] for f in json.loads(done.stdout)["files"][0]["findings"]
                if f["code"] == "invoke.wider_permissions"]
    assert any("secret DB_PASSWORD" in m for m in messages), messages
    assert any("host pattern db.internal" in m for m in messages), messages
    assert not any("api.example.com" in m for m in messages)  # *.example.com covers it
    parent["permissions"] = {"tools": ["t"], "secrets": ["DB_PASSWORD"],
                             "network": ["*.example.com", "db.internal"]}
    (tmp_path / "parent.lwir.json").write_text(json.dumps(parent))
    assert run_cli("validate", "parent.lwir.json", cwd=tmp_path).returncode == 0


def test_validate_tools_names_the_tools_the_network_list_does_not_bind(
        tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text("tools = {'fetch_page': lambda args: args}\n")
    (tmp_path / "w.lwir.yaml").write_text(
        HEAD + "permissions: {tools: [fetch_page], network: [example.com]}\nsteps:\n"
        "  - {id: a, uses: tool.call, with: {tool: fetch_page}}\n")
    done = run_cli("validate", "w.lwir.yaml", "--tools", "tools.py:tools", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr  # a warning
    assert "warning tools.network_unenforced tool 'fetch_page' is a Python tool" in \
        done.stdout
    (tmp_path / "w.lwir.yaml").write_text(
        HEAD + "permissions: {tools: [fetch_page]}\nsteps:\n"
        "  - {id: a, uses: tool.call, with: {tool: fetch_page}}\n")
    quiet = run_cli("validate", "w.lwir.yaml", "--tools", "tools.py:tools", cwd=tmp_path)
    assert "network_unenforced" not in quiet.stdout  # no list: nothing it fails to bind


def test_portable_flags_secrets_and_hosts_as_extensions() -> None:
    from lwtool.validate.portable import portable_findings

    document = load_text(HEAD + "permissions: {tools: [t], secrets: [K], network: [a.com]}\n"
                         "steps:\n  - {id: a, uses: tool.call, secrets: [K], with: {tool: t}}\n",
                         "w.yaml")
    assert [f.pointer for f in portable_findings(document, "Workflow")] == [
        "/permissions/secrets", "/permissions/network", "/steps/0/secrets"]
