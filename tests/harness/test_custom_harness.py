"""A custom worker harness plugs in with one class: from the CLI (`--harness`), a
definition (`worker.harness`) and the API (`harness=`); it is recorded in the worker
manifest, and a run resumed under another harness is capability drift."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from lwtool import local_world, replay_run, run_workflow
from lwtool.record.errors import CapabilityDriftError
from tests.conftest import ROOT, edit_store, run_cli
from tests.harness.custom_harness import BashCodeHarness, PythonCodeHarness
from tests.harness.test_bash import requires_bwrap

SOURCE = ("async def run(input, tools):\n"
          "    found = await tools('lookup', {'key': input['key']})\n"
          "    return {'value': found['value'], 'double': input['n'] * 2}\n")
PIN = "sha256:" + hashlib.sha256(SOURCE.encode()).hexdigest()
LWIR = {
    "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow", "metadata": {"name": "code"},
    "permissions": {"tools": ["lookup"], "models": []},
    "steps": [{"id": "compute", "uses": "code.run", "with": {
        "entrypoint": "main.py", "files": {"main.py": {"content": SOURCE, "sha256": PIN}},
        "sandbox": {"network": "deny", "env": "deny", "fs": "deny"}}}],
}
TOOLS = "def lookup(args):\n    return {'value': args['key'].upper()}\ntools = {'lookup': lookup}\n"
HARNESS = f"{ROOT / 'tests' / 'harness' / 'custom_harness.py'}:PythonCodeHarness"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "code.lwir.json").write_text(json.dumps(LWIR))
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "in.json").write_text('{"key": "ab", "n": 21}')
    return tmp_path


def _run(folder: Path, *extra: str, path: str = "code.lwir.json"):  # type: ignore[no-untyped-def]
    return run_cli("run", path, "--input", "in.json", "--tools", "tools.py:tools",
                   "--data-dir", "data", "--json", *extra, cwd=folder)


def test_the_cli_runs_a_custom_harness_and_records_it(folder: Path) -> None:
    result = _run(folder, "--harness", HARNESS, "--run-id", "r1")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["output"] == {"value": "AB", "double": 42}
    events = run_cli("events", "r1", "--data-dir", "data", "--json", cwd=folder).stdout
    parsed = [json.loads(line) for line in events.splitlines()]
    started = next(e for e in parsed if e["type"] == "harness.session.started")
    assert started["payload"]["manifest"]["harnessId"] == "tests/python-code-harness@1"
    calls = [e for e in parsed if e["type"] == "harness.tool_call.started"]
    assert [(c["payload"]["caller"], c["payload"]["toolName"]) for c in calls] == [
        ("code", "lookup")]
    drift = run_cli("replay", "r1", "--data-dir", "data", "--tools", "tools.py:tools",
                    cwd=folder)
    assert drift.returncode == 0  # a finished run reports its result under any harness


def test_the_default_harness_runs_code_as_typescript(folder: Path) -> None:
    """The Python source this custom harness understands is no TypeScript: the default
    harness's sandbox fails the step with the syntax error, at the file."""
    result = _run(folder)
    assert result.returncode == 1
    failed = json.loads(result.stdout)
    assert failed["causeCode"] == "step_failed" and "main.py" in failed["message"]


def test_a_definition_names_its_worker_harness(folder: Path) -> None:
    (folder / "harness.py").write_text((ROOT / "tests" / "harness" /
                                        "custom_harness.py").read_text())
    (folder / "code.definition.yaml").write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\nid: code\n"
        "planner: {plan: code.lwir.json}\nworker: {harness: \"./harness.py:PythonCodeHarness\"}\n")
    elsewhere = folder / "elsewhere"
    elsewhere.mkdir()
    result = run_cli("run", str(folder / "code.definition.yaml"), "--input",
                     str(folder / "in.json"), "--tools", str(folder / "tools.py") + ":tools",
                     "--data-dir", "data", "--json", cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["output"]["double"] == 42


@pytest.mark.parametrize(("spec", "message"), [
    ("nowhere.py:X", "harness file nowhere.py does not exist"),
    ("tools.py:tools", "is not a harness (it has no run(task, ctx) method)"),
    ("json:dumps", "is not a harness"),
])
def test_a_bad_harness_is_a_usage_error(folder: Path, spec: str, message: str) -> None:
    result = _run(folder, "--harness", spec)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_resuming_under_another_harness_is_capability_drift(tmp_path: Path) -> None:
    """A run cut short (its last events removed, as a kill would leave it) goes on only
    under the harness it started with."""
    world = local_world(tmp_path / "data")
    tools = {"lookup": lambda args: {"value": args["key"]}}
    first = asyncio.run(run_workflow(LWIR, {"key": "k", "n": 1}, world=world, tools=tools,
                                     harness=PythonCodeHarness(), run_id="r2"))
    world.close()
    edit_store(tmp_path / "data", "DELETE FROM events WHERE run_id = 'r2' AND type IN "
               "('RunCompleted', 'StepCompleted', 'harness.session.completed')",
               "UPDATE runs SET status = 'running' WHERE run_id = 'r2'", rechain="r2")
    world = local_world(tmp_path / "data")
    with pytest.raises(CapabilityDriftError) as info:
        asyncio.run(replay_run("r2", world=world, tools=tools))
    assert "started under the harness 'tests/python-code-harness@1'" in info.value.message
    resumed = asyncio.run(replay_run("r2", world=world, tools=tools,
                                     harness=PythonCodeHarness()))
    assert resumed["output"] == first["output"] == {"value": "k", "double": 2}


def _script_step(step_id: str, script: str, needs: list[str]) -> dict[str, object]:
    pin = "sha256:" + hashlib.sha256(script.encode()).hexdigest()
    return {"id": step_id, "uses": "code.run", "needs": needs, "with": {
        "entrypoint": "main.sh", "files": {"main.sh": {"content": script, "sha256": pin}},
        "sandbox": {"network": "deny", "env": "deny", "fs": "deny"}}}


@requires_bwrap
def test_worker_steps_get_their_scratch_and_bash_from_the_workspace(tmp_path: Path) -> None:
    lwir = {**LWIR, "permissions": {"tools": [], "models": []}, "steps": [
        _script_step("write", "pwd > where.txt; echo draft > out.txt; cat where.txt", []),
        _script_step("read", "cat /mnt/scratch/peer-steps/write/scratch/out.txt; bash -c "
                             "'echo x > /mnt/scratch/peer-steps/write/scratch/out.txt' "
                             "2>/dev/null || echo peer-steps-is-ro", ["write"])]}
    world = local_world(tmp_path / "data")
    result = asyncio.run(run_workflow(lwir, {}, world=world, run_id="w1",
                                      harness=BashCodeHarness()))
    assert result["output"] == "draft\npeer-steps-is-ro\n"
    assert not (tmp_path / "data/runs/w1").exists()  # scratch goes when the run ends


@requires_bwrap
def test_a_definitions_memory_and_worker_skills_reach_worker_steps(tmp_path: Path) -> None:
    script = ("cat /mnt/memory/workflow/lessons.md; cat .agents/skills/house/SKILL.md | tail -1;"
              " bash -c 'echo x > /mnt/memory/workflow/new.md' 2>/dev/null || echo memory-ro")
    lwir = {**LWIR, "permissions": {"tools": [], "models": []},
            "steps": [_script_step("look", script, [])]}
    (tmp_path / "plan.lwir.json").write_text(json.dumps(lwir))
    (tmp_path / "skills/house").mkdir(parents=True)
    (tmp_path / "skills/house/SKILL.md").write_text(
        "---\nname: house\ndescription: House style.\n---\nWrite plainly.\n")
    (tmp_path / "def.yaml").write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\nid: support\n"
        "planner: {plan: plan.lwir.json}\n"
        f"worker: {{harness: '{ROOT / 'tests/harness/custom_harness.py'}:BashCodeHarness', "
        "skills: [skills/house]}\nmemory: {workflow: rw, org: ro}\n")
    (tmp_path / "data/memory/workflows/support").mkdir(parents=True)
    (tmp_path / "data/memory/workflows/support/lessons.md").write_text("be kind\n")
    (tmp_path / "in.json").write_text("{}")
    done = run_cli("run", "def.yaml", "--input", "in.json", "--data-dir", "data", "--json",
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == "be kind\nWrite plainly.\nmemory-ro\n"


def _code_step(step_id: str, source: str, needs: list[str] | None = None,
               **extra: object) -> dict[str, object]:
    pin = "sha256:" + hashlib.sha256(source.encode()).hexdigest()
    return {"id": step_id, "uses": "code.run", **({"needs": needs} if needs else {}),
            **extra, "with": {"entrypoint": "main.py", "files": {
                "main.py": {"content": source, "sha256": pin}},
                "sandbox": {"network": "deny", "env": "deny", "fs": "deny"}}}


def test_a_custom_harness_output_is_plain_json_for_the_rest_of_the_run(
        tmp_path: Path) -> None:
    """What a custom harness returns is turned into JSON before any later step sees it,
    as a tool's result is: live and replayed, a later step reads the same value."""
    lwir = {**LWIR, "permissions": {"tools": [], "models": []}, "steps": [
        _code_step("make", "async def run(input, tools):\n    return {'pair': (1, 2)}\n"),
        _code_step("show", "async def run(input, tools):\n    return repr(input)\n",
                   needs=["make"], input={"pair": "{{ steps.make.output.pair }}"})]}
    world = local_world(tmp_path / "data")
    result = asyncio.run(run_workflow(lwir, {}, world=world, run_id="j1",
                                      harness=PythonCodeHarness()))
    assert result["output"] == "{'pair': [1, 2]}"  # a list, as a replay reads it back


def test_a_custom_harness_output_that_is_not_json_fails_its_step(tmp_path: Path) -> None:
    from lwtool import RunFailedError

    lwir = {**LWIR, "permissions": {"tools": [], "models": []}, "steps": [
        _code_step("odd", "async def run(input, tools):\n    return {'x': float('nan')}\n")]}
    world = local_world(tmp_path / "data")
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(lwir, {}, world=world, harness=PythonCodeHarness()))
    assert info.value.cause_code == "step_schema_error"
    assert "/x" in info.value.message and "NaN" in info.value.message


def test_a_custom_harness_changing_its_input_changes_nothing_else(tmp_path: Path) -> None:
    spoil = "async def run(input, tools):\n    input['items'].append(99)\n    return 'ok'\n"
    lwir = {**LWIR, "permissions": {"tools": [], "models": []}, "steps": [
        _code_step("make", "async def run(input, tools):\n    return {'items': [1]}\n"),
        _code_step("spoil", spoil, needs=["make"],
                   input={"items": "{{ steps.make.output.items }}"}),
        _code_step("show", "async def run(input, tools):\n    return input\n",
                   needs=["make", "spoil"], input={"items": "{{ steps.make.output.items }}"})]}
    world = local_world(tmp_path / "data")
    result = asyncio.run(run_workflow(lwir, {}, world=world, run_id="j2",
                                      harness=PythonCodeHarness()))
    assert result["output"] == {"items": [1]}
    started = [e.payload for e in world.events("j2") if e.type == "StepAttemptStarted"]
    assert [p["input"] for p in started][1:] == [{"items": [1]}, {"items": [1]}]
