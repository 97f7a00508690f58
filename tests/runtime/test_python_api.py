"""The Python API as the spec names it ("Definitions honoured end to end", item 8):
`run_workflow` takes a definition too, `run_definition` takes what `define_workflow`
returns, a whole-run `timeout` (cause `timeout`, the run resumable), the `skill()`
helper, and `--json` on an interrupted run says `cancelled` with the way to resume."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lwtool import (
    RunFailedError,
    define_workflow,
    local_world,
    replay_run,
    run_definition,
    run_workflow,
    skill,
)
from lwtool.authoring import planner
from tests.conftest import ROOT
from tests.runtime.test_kill_and_replay import _env, _wait_for

EX = ROOT / "examples"
TOOLS = f"{ROOT / 'tests' / 'runtime' / 'side_effects.py'}:tools"
SLOW: dict[str, Any] = {
    "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
    "metadata": {"name": "slow", "version": "0.1.0"},
    "permissions": {"tools": ["wait", "done"], "models": []},
    "steps": [{"id": "a", "uses": "tool.call", "with": {"tool": "done", "args": {"n": 1}}},
              {"id": "b", "uses": "tool.call", "needs": ["a"], "with": {"tool": "wait"}}]}


def _tools(delay: float, calls: list[str]) -> dict[str, Any]:
    async def wait(args: Any) -> str:
        calls.append("wait")
        await asyncio.sleep(delay)
        return "waited"

    def done(args: Any) -> Any:
        calls.append("done")
        return args

    return {"wait": wait, "done": done}


def _definition(tmp_path: Path) -> Any:
    import shutil

    shutil.copy(EX / "refine-loop.lwir.yaml", tmp_path / "loop.lwir.yaml")
    return define_workflow("loop", planner=planner(plan=str(tmp_path / "loop.lwir.yaml")),
                           tools=["improve", "checkText", "publish"])


def test_run_definition_takes_what_define_workflow_returns(tmp_path: Path) -> None:
    from tests.runtime.side_effects import tools

    definition = _definition(tmp_path)
    run_input = json.loads((EX / "inputs" / "refine-loop.json").read_text())
    world = local_world(tmp_path / "data")
    result = asyncio.run(run_definition(definition, run_input, world=world, tools=tools))
    assert result["status"] == "completed"
    assert [e["type"] for e in result["events"]][0] == "RunStarted"  # as run_workflow's
    assert result["events"][-1]["type"] == "RunCompleted"
    again = asyncio.run(run_workflow(definition.document(), run_input, world=world,
                                     tools=tools, run_id="via-run-workflow"))
    assert again["output"] == result["output"] and again["runId"] == "via-run-workflow"


def test_a_whole_run_timeout_stops_the_run_resumably(tmp_path: Path) -> None:
    world, calls = local_world(tmp_path / "data"), []
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(SLOW, {}, world=world, tools=_tools(30, calls),
                                 run_id="t1", timeout=0.5))
    assert info.value.cause_code == "timeout" and info.value.run_id == "t1"
    assert info.value.result == {"runId": "t1", "status": "interrupted",
                                 "causeCode": "timeout"}
    resumed = asyncio.run(replay_run("t1", world=world, tools=_tools(0, calls)))
    assert resumed["output"] == "waited"
    assert calls == ["done", "wait", "wait"]  # `a` committed: not called again
    with pytest.raises(ValueError, match="more than 0 seconds"):
        asyncio.run(run_workflow(SLOW, {}, world=world, tools=_tools(0, []), timeout=0))


def test_skill_checks_a_source_as_validate_does() -> None:
    assert skill("./skills/triage") == "./skills/triage"
    assert skill("git+https://h.example/o/r.git@v1") == "git+https://h.example/o/r.git@v1"
    with pytest.raises(ValueError, match="would be read as a git option"):
        skill("git+ssh://-oProxyCommand=x/r.git")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_run_says_cancelled_in_json(tmp_path: Path, sig: int, code: int) -> None:
    (tmp_path / "in.json").write_text(json.dumps({"text": "draft"}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", str(EX / "refine-loop.lwir.yaml"), "--input",
         str(tmp_path / "in.json"), "--tools", TOOLS, "--data-dir", str(tmp_path / "data"),
         "--run-id", "sig", "--json"], cwd=ROOT,
        env=_env(tmp_path, LWTOOL_TEST_BLOCK="improve-1"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "blocked-improve-1", proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert json.loads(out) == {"runId": "sig", "status": "interrupted", "causeCode": "cancelled",
                               "resume": f"resume it with `lwtool replay sig --tools {TOOLS} "
                                         f"--data-dir {tmp_path / 'data'}`"}


def test_the_run_result_carries_its_events(tmp_path: Path) -> None:
    world, calls = local_world(tmp_path / "data"), []
    result = asyncio.run(run_workflow(SLOW, {}, world=world, tools=_tools(0, calls),
                                      run_id="e1"))
    kinds = [e["type"] for e in result["events"]]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunCompleted"
    assert [e["seq"] for e in result["events"]] == list(range(1, len(kinds) + 1))
    assert all(e["runId"] == "e1" for e in result["events"])
    replayed = asyncio.run(replay_run("e1", world=world, tools=_tools(0, calls)))
    assert replayed["events"] == result["events"] and calls == ["done", "wait"]


def test_the_specs_helper_names(tmp_path: Path) -> None:
    """`model(...)` makes a model slot, `create_tool_registry` takes callables or the
    spec's `{execute, description, inputSchema}`, and what `define_workflow` returns
    carries its WorkflowDefinitionHash (the one `lwtool hash` gives its file)."""
    import lwtool

    assert lwtool.model("openai/gpt-4o-mini") == {"id": "gpt-4o-mini",
                                                  "model": "openai/gpt-4o-mini"}
    assert lwtool.model("anthropic/claude-haiku-4-5", id="writer")["id"] == "writer"
    with pytest.raises(ValueError):
        lwtool.model("")
    registry = lwtool.create_tool_registry({
        "double": lambda args: {"n": args["n"] * 2},
        "shout": {"execute": lambda args: args["t"].upper(), "description": "Loud.",
                  "inputSchema": {"type": "object", "properties": {"t": {"type": "string"}}}}})
    assert registry.names() == ["double", "shout"]
    assert registry.tools["shout"].description == "Loud."
    assert registry.tools["shout"].input_schema["properties"]["t"] == {"type": "string"}
    with pytest.raises(TypeError, match="tool 'x': give a callable"):
        lwtool.create_tool_registry({"x": 3})
    definition = lwtool.define_workflow(
        "ticket", planner={"model": "writer"}, models=[lwtool.model("openai/gpt-4o-mini",
                                                                   id="writer")])
    path = tmp_path / "ticket.definition.yaml"
    path.write_text(json.dumps(definition.document()))  # JSON is YAML
    hashed = subprocess.run([sys.executable, "-m", "lwtool", "hash", str(path)],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert definition.workflow_definition_hash == hashed
