"""`lwtool orchestrate` as a user runs it: an orchestrator model behind litellm on the
loopback fixture server plans the example pipeline's workflow once and runs it for each
number; a broken pipeline is refused at its line and column; the same --run-id
resumes a finished run without asking the model again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, run_cli
from tests.fixtures.openai_server import fixture_server
from tests.orchestrate.helpers import double_version

EXAMPLE = ROOT / "examples" / "pipeline"


def _env(server: Any) -> dict[str, str]:
    return {"OPENAI_API_BASE": server.base_url, "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-fixture", "LWTOOL_BASH_SANDBOX": "path-check"}


def _orchestrate(folder: Path, server: Any, *extra: str) -> Any:
    return run_cli("orchestrate", "numbers.pipeline.yaml", "-i", "input.json", "--tools",
                   "tools.py:tools", "--models", "models.yaml", "--data-dir", "data",
                   "--run-id", "p1", *extra, cwd=folder, env=_env(server))


def test_the_example_pipeline_runs_through_litellm(tmp_path: Path) -> None:
    folder = tmp_path / "pipeline"
    shutil.copytree(EXAMPLE, folder)
    (folder / "models.yaml").write_text("orchestrator: openai/fixture-orchestrator\n")
    version = double_version(folder)
    runs = [{"name": "run_workflow", "arguments": json.dumps(
        {"workflowVersionId": version, "input": {"n": n}})} for n in (1, 2, 3)]
    replies = [{"tool_calls": [{"name": "plan_workflow", "arguments": json.dumps(
        {"workflowId": "double", "input": {"n": 1}})}]}, {"tool_calls": runs}, "2, 4, 6"]
    with fixture_server(replies) as server:
        done = _orchestrate(folder, server, "--json")
        again = _orchestrate(folder, server)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["output"] == "2, 4, 6" and result["status"] == "completed"
    assert [s["status"] for s in result["subRuns"]] == ["completed"] * 3
    tools = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert {"plan_workflow", "run_workflow", "start_workflow", "double"} <= set(tools)
    assert "Double every number" in server.requests[0]["messages"][-1]["content"]
    assert again.returncode == 0 and again.stdout.strip() == "2, 4, 6"
    assert len(server.requests) == 3  # the finished run was not asked again
    assert "3 of 3 sub-runs completed" in again.stderr
    tree = run_cli("runs", "--data-dir", "data", cwd=folder).stdout.splitlines()
    assert [line.split()[0:2] for line in tree] == [
        ["RUN", "STATUS"], ["p1", "completed"], ["└", "p1.sub.1.0"], ["└", "p1.sub.1.1"],
        ["└", "p1.sub.1.2"]]
    rows = json.loads(run_cli("runs", "--data-dir", "data", "--json", cwd=folder).stdout)
    assert [r["parentRunId"] for r in rows] == [None, "p1", "p1", "p1"]
    report = json.loads(run_cli("report", "p1", "--data-dir", "data", "--json",
                                cwd=folder).stdout)
    assert [(r["role"], r["runId"]) for r in report["runs"]] == [
        ("orchestrator", "p1"), ("worker", "p1.sub.1.0"), ("worker", "p1.sub.1.1"),
        ("worker", "p1.sub.1.2")]
    assert report["run"]["inputTokens"] == 3 * 11  # the fixture's usage per answer


def test_a_broken_pipeline_is_refused_at_its_position(tmp_path: Path) -> None:
    folder = tmp_path / "pipeline"
    shutil.copytree(EXAMPLE, folder)
    text = (folder / "numbers.pipeline.yaml").read_text()
    (folder / "numbers.pipeline.yaml").write_text(
        text.replace("[double.definition.yaml]", "[double.definition.yaml, gone.yaml]"))
    (folder / "models.yaml").write_text("orchestrator: openai/x\n")
    with fixture_server([]) as server:
        done = _orchestrate(folder, server)
    assert done.returncode == 1
    assert "numbers.pipeline.yaml:5:37: error pipeline.invalid_workflow workflow " \
        "'gone.yaml' does not exist" in done.stderr
    assert server.requests == [] and not (folder / "data").exists()


def test_a_tool_named_like_the_orchestrators_own_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "pipeline"
    shutil.copytree(EXAMPLE, folder)
    (folder / "tools.py").write_text("def plan_workflow(args):\n    return args\n\n"
                                     "tools = {'plan_workflow': plan_workflow}\n")
    (folder / "models.yaml").write_text("orchestrator: openai/x\n")
    with fixture_server([]) as server:
        done = _orchestrate(folder, server)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("lwtool: the orchestrator's own tools (the workflows') "
                                   "cannot be replaced: rename plan_workflow")
    assert server.requests == []


def test_a_pipeline_without_its_workflows_tools_is_refused_before_anything_runs(
        tmp_path: Path) -> None:
    folder = tmp_path / "pipeline"
    shutil.copytree(EXAMPLE, folder)
    (folder / "tools.py").write_text("tools = {}\n")
    (folder / "models.yaml").write_text("orchestrator: openai/x\n")
    with fixture_server([]) as server:
        done = _orchestrate(folder, server)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "lwtool: workflow 'double' of the pipeline declares tool 'double' that is not "
        "provided (tools given: none): pass --tools MODULE:ATTR that registers it; nothing "
        "was run\n")
    assert server.requests == [] and not (folder / "data").exists()
