"""Pipelines of pipelines: a pipeline's `workflows:` may list another pipeline, which
the orchestrator runs as a nested pipeline (its own orchestrator session, a sub-run
nested under the parent's, its sub-runs under it, the report rolling all up); maxDepth
ends a deeper nesting with a clear cause; `validate` refuses a pipeline that lists
itself, directly or through others, naming the chain."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import ROOT, run_cli

EXAMPLES = ROOT / "examples" / "pipeline"
TOOLS = f"{EXAMPLES / 'tools.py'}:tools"


def _folder(tmp_path: Path) -> Path:
    for name in ("double.definition.yaml", "double.lwir.yaml", "numbers.pipeline.yaml",
                 "numbers-twice.pipeline.yaml", "input.json"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    return tmp_path


def _orchestrate(folder: Path, pipeline: str, run_id: str) -> dict[str, object]:
    done = run_cli("orchestrate", pipeline, "--input", "input.json", "--offline", "--tools",
                   TOOLS, "--data-dir", "data", "--run-id", run_id, "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_a_nested_pipeline_runs_as_a_sub_run_with_its_own(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    result = _orchestrate(folder, "numbers-twice.pipeline.yaml", "nest")
    doubled = [{"value": 2}, {"value": 4}, {"value": 6}]
    answer = json.loads(str(result["output"]))
    assert answer["double"] == doubled and json.loads(answer["numbers"][0]) == {
        "double": doubled}
    rows = json.loads(run_cli("runs", "--data-dir", "data", "--json", cwd=folder).stdout)
    tree = {r["runId"]: r.get("parentRunId") for r in rows}
    nested = "nest.sub.1.3"
    assert tree[nested] == "nest"
    assert sorted(k for k, v in tree.items() if v == nested) == [
        f"{nested}.sub.1.{n}" for n in range(3)]
    report = json.loads(run_cli("report", "nest", "--data-dir", "data", "--json",
                                cwd=folder).stdout)
    assert {r["runId"] for r in report["runs"]} >= {nested, f"{nested}.sub.1.0"}


def test_max_depth_ends_a_deeper_nesting_with_a_clear_cause(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "top.pipeline.yaml").write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: Pipeline\nid: top\n"
        "workflows: [numbers-twice.pipeline.yaml]\n"
        "orchestrator: {model: orchestrator, maxDepth: 1}\n")
    result = _orchestrate(folder, "top.pipeline.yaml", "deep")
    nested = "deep.sub.1.0"
    events = run_cli("events", nested, "--data-dir", "data", "--json", "--type",
                     "harness.tool_call.succeeded", cwd=folder).stdout.splitlines()
    results = [json.loads(line)["payload"]["result"] for line in events]
    refused = [r for r in results if r.get("status") == "failed"]
    assert refused and all(r["error"].startswith("max_depth: pipeline numbers would nest "
                                                 "2 deep, past maxDepth 1") for r in refused)
    assert result["status"] == "completed"


def test_validate_refuses_a_pipeline_that_lists_itself(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    head = "apiVersion: littleworkflow.dev/v0.1\nkind: Pipeline\n"
    (folder / "self.pipeline.yaml").write_text(
        head + "id: self\nworkflows: [self.pipeline.yaml]\norchestrator: {model: m}\n")
    (folder / "a.pipeline.yaml").write_text(
        head + "id: a\nworkflows: [b.pipeline.yaml]\norchestrator: {model: m}\n")
    (folder / "b.pipeline.yaml").write_text(
        head + "id: b\nworkflows: [double.definition.yaml, a.pipeline.yaml]\n"
        "orchestrator: {model: m}\n")
    found = run_cli("validate", "self.pipeline.yaml", "a.pipeline.yaml",
                    "numbers-twice.pipeline.yaml", cwd=folder)
    assert found.returncode == 1
    lines = found.stdout.splitlines()
    assert any("self.pipeline.yaml:4:" in line and "makes a cycle of pipelines: "
               "self.pipeline.yaml -> self.pipeline.yaml" in line for line in lines), lines
    assert any("a.pipeline.yaml:4:" in line and "workflow 'b.pipeline.yaml' lists "
               "'a.pipeline.yaml', which makes a cycle of pipelines: a.pipeline.yaml -> "
               "b.pipeline.yaml -> a.pipeline.yaml" in line for line in lines), lines
    assert not any("numbers-twice" in line for line in lines)


def test_a_pipeline_is_a_typed_tool_of_a_harness(tmp_path: Path) -> None:
    """From Python: `create_harness(workflows=[a Pipeline])` offers it as a tool of its
    own; a call runs it as a nested pipeline."""
    import asyncio
    import importlib.util

    from lwtool import create_harness
    from lwtool.orchestrate.pipeline import load_pipeline
    from lwtool.world.local import LocalWorld

    spec = importlib.util.spec_from_file_location("pipeline_tools", EXAMPLES / "tools.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    agent = create_harness(workflows=[load_pipeline(EXAMPLES / "numbers.pipeline.yaml")],
                           model="offline")
    world = LocalWorld(tmp_path / "data")
    try:
        result = asyncio.run(agent.run({"numbers": [1, 2]}, world=world, tools=module.tools,
                                       models={"orchestrator": "offline"}, run_id="T"))
    finally:
        world.close()
    assert result["status"] == "completed"
    assert json.loads(json.loads(result["output"])["numbers"][0]) == {
        "double": [{"value": 2}, {"value": 4}]}
    assert [(s["runId"], s["status"]) for s in result["subRuns"]] == [("T.sub.0.0",
                                                                      "completed")]
