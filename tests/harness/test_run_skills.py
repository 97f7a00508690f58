"""Skills given at run time (`lwtool run --skill`, the API's `skills=`): they reach every
ai.generate call's system prompt and its manifest's skillsHash, leave the
WorkflowVersion id alone, are checked before anything runs (a folder without SKILL.md,
a link out of the folder), and a resume asked with other skills is capability drift."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures.openai_server import fixture_server

LWIR = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: triage}
permissions: {tools: [], models: [fast]}
steps:
  - id: label
    uses: ai.generate
    with: {model: fast, system: Step rules., prompt: Label it.}
"""
SKILL = "---\nname: tone\ndescription: Keep labels short.\n---\nUse one word.\n"
OTHER = "---\nname: style\ndescription: Use capitals.\n---\nShout.\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "triage.lwir.yaml").write_text(LWIR)
    (tmp_path / "models.yaml").write_text("fast: openai/gpt-4o-mini\n")
    for name, text in (("tone", SKILL), ("style", OTHER)):
        (tmp_path / "skills" / name).mkdir(parents=True)
        (tmp_path / "skills" / name / "SKILL.md").write_text(text)
    (tmp_path / "in.json").write_text("{}")
    return tmp_path


def _run(folder: Path, server: object, *extra: str) -> object:
    base = server.base_url  # type: ignore[attr-defined]
    return run_cli("run", "triage.lwir.yaml", "-i", "in.json", "--models", "models.yaml",
                   "--data-dir", "data", "--json", *extra, cwd=folder,
                   env={"OPENAI_API_BASE": base, "OPENAI_BASE_URL": base,
                        "OPENAI_API_KEY": "sk-fixture"})


def _manifest(folder: Path, run_id: str) -> dict[str, object]:
    events = run_cli("events", run_id, "--json", "--data-dir", "data", cwd=folder).stdout
    started = [json.loads(line) for line in events.splitlines()
               if '"harness.session.started"' in line]
    return started[0]["payload"]["manifest"]


def test_run_time_skills_reach_the_model_and_the_manifest_not_the_version(
        folder: Path) -> None:
    with fixture_server(["bug", "bug"]) as server:
        plain = _run(folder, server, "--run-id", "plain")
        given = _run(folder, server, "--run-id", "given", "--skill", "skills/tone")
    assert plain.returncode == 0 and given.returncode == 0, given.stderr  # type: ignore
    without, with_skill = (r["messages"][0]["content"] for r in server.requests)
    assert "Available skills" not in without
    assert "- tone: Keep labels short." in with_skill
    assert with_skill.index("Available skills") < with_skill.index("Step rules.")
    assert json.loads(plain.stdout)["workflowVersionId"] == \
        json.loads(given.stdout)["workflowVersionId"]  # type: ignore[attr-defined]
    assert _manifest(folder, "plain")["skillsHash"] != _manifest(folder, "given")["skillsHash"]


def test_a_resume_asked_with_other_skills_is_drift(folder: Path) -> None:
    with fixture_server(["bug"]) as server:
        first = _run(folder, server, "--run-id", "r1", "--skill", "skills/tone")
        assert first.returncode == 0, first.stderr  # type: ignore[attr-defined]
        other = _run(folder, server, "--run-id", "r1", "--skill", "skills/style")
        same = _run(folder, server, "--run-id", "r1", "--skill", "skills/tone")
    assert other.returncode == 1  # type: ignore[attr-defined]
    assert "capability_drift" in other.stdout + other.stderr  # type: ignore[attr-defined]
    assert "skills/tone" in other.stdout + other.stderr  # type: ignore[attr-defined]
    assert same.returncode == 0, same.stderr  # type: ignore[attr-defined]
    assert len(server.requests) == 1  # the resumes re-sent nothing


def test_a_skill_that_is_not_one_is_refused_before_anything_runs(folder: Path) -> None:
    (folder / "empty").mkdir()
    outside = folder.parent / f"{folder.name}-secret.md"
    outside.write_text("secret")
    (folder / "skills/linked").mkdir()
    os.symlink(outside, folder / "skills/linked/SKILL.md")
    with fixture_server([]) as server:
        for bad in ("empty", "skills/linked", "nowhere"):
            done = _run(folder, server, "--skill", bad)
            assert done.returncode == 2, (bad, done.stderr)  # type: ignore[attr-defined]
            assert "--skill" in done.stderr  # type: ignore[attr-defined]
    assert server.requests == []
    listed = run_cli("runs", "--json", "--data-dir", "data", cwd=folder).stdout
    assert json.loads(listed or "[]") == []  # nothing was written


def test_the_api_takes_skills(folder: Path) -> None:
    from lwtool import local_world, run_workflow
    from lwtool.harness.contract import ExecuteStepTask, HarnessContext, HarnessResult
    from lwtool.harness.workflow import WorkflowHarness

    world = local_world(folder / "data")
    seen: list[str] = []

    class Harness(WorkflowHarness):
        harness_id = "tests/skills-harness@1"

        async def execute_ai_generate(self, task: ExecuteStepTask,
                                      ctx: HarnessContext) -> HarnessResult:
            seen.append(str(ctx.system))
            return HarnessResult("execute_step", "bug")

    done = asyncio.run(run_workflow(folder / "triage.lwir.yaml", {}, world=world,
                                    models={"fast": "openai/gpt-4o-mini"},
                                    harness=Harness(), skills=[folder / "skills/style"]))
    assert done["status"] == "completed" and "- style: Use capitals." in seen[0]
