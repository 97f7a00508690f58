"""`lwtool mcp`: lwtool's compiler as an MCP server on stdio, driven by the SDK's own
client and by the MCP Inspector's command line (npm, tests/clients). Each answer is
the CLI's: the same findings with positions, graph, hash and canonical JSON; runs and
events of a real run; an offline plan whose LWIR hashes to the id it reports; errors
(an unknown code, a file that is not valid, a run that does not exist) as error
results in the CLI's words."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli

INSPECTOR = ROOT / "tests" / "clients" / "node_modules" / ".bin" / "mcp-inspector"
pytestmark = pytest.mark.slow

BROKEN = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: broken}
steps:
  - {id: a, uses: ai.generat}
  - {id: b, uses: tool.call, needs: [c], with: {tool: t}}
"""


def _folder(tmp_path: Path) -> Path:
    for name in ("candidate-review.lwir.yaml", "summarize-ticket.definition.yaml",
                 "models.offline.yaml"):
        shutil.copy(ROOT / "examples" / name, tmp_path / name)
    shutil.copy(ROOT / "examples" / "inputs" / "candidate-review.json", tmp_path / "in.json")
    (tmp_path / "broken.lwir.yaml").write_text(BROKEN)
    return tmp_path


async def _session(folder: Path, calls: list[tuple[str, dict[str, Any]]],
                   *options: str, listing: list[Any] | None = None) -> list[Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "lwtool", "mcp", "--data-dir", "data",
                                         *options], cwd=str(folder))
    # The server's stderr goes to a real file: the SDK's default (sys.stderr) has no
    # fileno under some pytest capture modes.
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        return await _calls(Client(stdio_client(server, errlog=errlog)), calls, listing)


async def _calls(connected: Any, calls: list[tuple[str, dict[str, Any]]],
                 listing: list[Any] | None) -> list[Any]:
    async with connected as client:
        listed = await client.list_tools()
        if listing is not None:
            listing.extend(listed.tools)
        answers = [sorted(tool.name for tool in listed.tools)]
        for name, args in calls:
            answers.append(await client.call_tool(name, args))
        return answers


def test_the_sdk_client_gets_the_clis_answers(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    ran = run_cli("run", "candidate-review.lwir.yaml", "-i", "in.json", "--models",
                  "models.offline.yaml", "--data-dir", "data", "--run-id", "r1", "-q",
                  cwd=folder)
    assert ran.returncode == 0, ran.stderr
    calls: list[tuple[str, dict[str, Any]]] = [
        ("validate", {"path": "broken.lwir.yaml"}),
        ("validate", {"text": BROKEN, "name": "draft.lwir.yaml"}),
        ("validate", {"path": "."}),
        ("explain", {"code": "step.missing_dependency"}),
        ("explain", {"code": "step.missing_dep"}),
        ("graph", {"path": "candidate-review.lwir.yaml"}),
        ("hash", {"path": "candidate-review.lwir.yaml"}),
        ("canon", {"text": (folder / "candidate-review.lwir.yaml").read_text()}),
        ("hash", {"path": "broken.lwir.yaml"}),
        ("runs", {}),
        ("events", {"runId": "r1", "type": "Run*"}),
        ("events", {"runId": "nope"}),
        ("plan", {"path": "summarize-ticket.definition.yaml",
                  "input": {"ticket": "The app crashes on start."}, "offline": True,
                  "out": "ticket.lwir.yaml"}),
    ]
    listed, *answers = asyncio.run(_session(folder, calls))
    assert listed == ["canon", "events", "explain", "graph", "hash", "plan", "runs",
                      "validate"]
    got = dict(zip(range(len(calls)), answers, strict=True))

    cli = json.loads(run_cli("validate", "broken.lwir.yaml", "--format", "json",
                             cwd=folder).stdout)["files"][0]["findings"]
    by_path = got[0].structured_content
    assert by_path["valid"] is False and by_path["files"][0]["path"] == "broken.lwir.yaml"
    assert by_path["files"][0]["findings"] == cli and len(cli) >= 2
    assert [f["code"] for f in got[1].structured_content["files"][0]["findings"]] == \
        [f["code"] for f in cli]
    folder_files = {f["path"]: f["valid"] for f in got[2].structured_content["files"]}
    assert folder_files == {"broken.lwir.yaml": False, "candidate-review.lwir.yaml": True,
                            "summarize-ticket.definition.yaml": True}
    assert got[3].structured_content["code"] == "step.missing_dependency"
    assert "## Instead" in got[3].structured_content["explanation"]
    assert got[4].is_error and "did you mean step.missing_dependency" in \
        got[4].content[0].text
    assert got[5].structured_content["graph"] == run_cli(
        "graph", "candidate-review.lwir.yaml", cwd=folder).stdout
    version = run_cli("hash", "candidate-review.lwir.yaml", cwd=folder).stdout.strip()
    assert got[6].structured_content == {"kind": "Workflow", "workflowVersionId": version}
    assert got[7].structured_content["canonical"] + "\n" == run_cli(
        "canon", "candidate-review.lwir.yaml", cwd=folder).stdout
    assert got[8].is_error and "broken.lwir.yaml is not valid; nothing to hash: " \
        "broken.lwir.yaml:5:" in got[8].content[0].text
    runs = got[9].structured_content["runs"]
    assert [(r["runId"], r["status"], r["workflowVersionId"]) for r in runs] == \
        [("r1", "completed", version)]
    assert [e["type"] for e in got[10].structured_content["events"]] == \
        ["RunStarted", "RunCompleted"]
    assert got[11].is_error and "nope" in got[11].content[0].text
    planned = got[12].structured_content
    assert planned["path"] == "ticket.lwir.yaml"
    assert planned["lwir"] == (folder / "ticket.lwir.yaml").read_text()
    assert planned["workflowVersionId"] == run_cli("hash", "ticket.lwir.yaml",
                                                   cwd=folder).stdout.strip()
    assert (folder / "ticket.lwir.lock.json").exists()


def _inspect(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(INSPECTOR), "--cli", sys.executable, "-m", "lwtool", "mcp",
                           *args], cwd=folder, capture_output=True, text=True, timeout=120)


def test_the_mcp_inspector_lists_and_calls_the_tools(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    listed = _inspect(folder, "--method", "tools/list")
    assert listed.returncode == 0, listed.stderr
    tools = {tool["name"]: tool for tool in json.loads(listed.stdout)["tools"]}
    assert set(tools) == {"validate", "explain", "graph", "hash", "canon", "plan", "runs",
                          "events"}
    assert "runId" in tools["events"]["inputSchema"]["properties"]
    found = _inspect(folder, "--method", "tools/call", "--tool-name", "validate",
                     "--tool-arg", "path=broken.lwir.yaml")
    assert found.returncode == 0, found.stderr
    findings = json.loads(found.stdout)["structuredContent"]["files"][0]["findings"]
    assert (findings[0]["code"], findings[0]["line"]) == ("step.unknown_type", 5)
    unknown = _inspect(folder, "--method", "tools/call", "--tool-name", "explain",
                       "--tool-arg", "code=nothing.like.this")
    assert '"isError": true' in unknown.stdout
    assert "no finding has the code 'nothing.like.this'" in unknown.stdout


def test_without_the_sdk_the_command_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "mcp").mkdir()
    (tmp_path / "mcp" / "__init__.py").write_text("raise ImportError('no', name='mcp')\n")
    refused = run_cli("mcp", env={"PYTHONPATH": str(tmp_path)})
    assert refused.returncode == 2
    assert "pip install 'lwtool[mcp]'" in refused.stderr


HARNESS_DEFINITION = """\
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: steered
description: A definition whose planner harness is the repository's Python.
input: {schema: {type: object}}
output: {schema: {type: object}}
models: [{id: writer, model: openai/gpt-4o-mini}]
planner: {model: writer, harness: "planner_code.py:harness"}
"""


def test_a_steered_agent_reads_writes_and_runs_nothing_outside_the_served_folder(
        tmp_path: Path) -> None:
    """What text in a repository could steer a coding agent to ask of `lwtool mcp`:
    paths out of the folder (`..`, absolute, a symlink), a plan written over a file
    that is not LWIR, run ids that are options, and a definition whose planner harness
    is the repository's own Python (imported only under --allow-code)."""
    (tmp_path / "repo").mkdir()
    folder = _folder(tmp_path / "repo")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep me")
    (folder / "notes.lwir.yaml").write_text("export PATH=/evil:$PATH\n")
    (folder / "link.lwir.yaml").symlink_to(outside / "keep.txt")
    (folder / "steered.definition.yaml").write_text(HARNESS_DEFINITION)
    marker = tmp_path / "imported"
    (folder / "planner_code.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\nharness = None\n")
    plan = {"path": "summarize-ticket.definition.yaml", "input": {"ticket": "t"},
            "offline": True}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("plan", {**plan, "out": "../outside/keep.lwir.yaml"}),
        ("plan", {**plan, "out": str(outside / "new.lwir.yaml")}),
        ("plan", {**plan, "out": "keep.txt"}),
        ("plan", {**plan, "out": "notes.lwir.yaml"}),
        ("plan", {**plan, "out": "link.lwir.yaml"}),
        ("plan", {**plan, "path": "../outside/keep.txt"}),
        ("validate", {"path": "../outside"}),
        ("validate", {"path": "/proc/1"}),
        ("hash", {"path": "link.lwir.yaml"}),
        ("events", {"runId": "--help"}),
        ("events", {"runId": "-h"}),
        ("events", {"runId": "--data-dir=/"}),
        ("plan", {"path": "steered.definition.yaml", "offline": True}),
    ]
    listing: list[Any] = []
    _, *got = asyncio.run(_session(folder, calls, listing=listing))
    said = [answer.content[0].text for answer in got]
    assert all(answer.is_error for answer in got), said
    for n in (0, 1, 4, 5, 6, 7, 8):
        assert "is outside the folder this server serves" in said[n], said[n]
    assert "plan writes LWIR files only" in said[2]
    assert "notes.lwir.yaml exists and is not an LWIR workflow" in said[3]
    for n in (9, 10, 11):
        assert "invalid run id" in said[n], said[n]
    assert "planner.harness" in said[12] and "--allow-code" in said[12]
    assert not marker.exists()
    assert (outside / "keep.txt").read_text() == "keep me"
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (folder / "notes.lwir.yaml").read_text() == "export PATH=/evil:$PATH\n"
    tools = {tool.name: tool for tool in listing}
    assert tools["plan"].input_schema["properties"]["input"]["anyOf"][0]["type"] == "object"
    assert tools["plan"].annotations.read_only_hint is False
    assert all(tools[name].annotations.read_only_hint for name in tools if name != "plan")
    allowed = asyncio.run(_session(folder, calls[-1:], "--allow-code"))
    assert marker.read_text() == "ran", allowed[1].content[0].text
