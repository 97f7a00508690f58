"""`lwtool plan` and `lwtool run DEFINITION` as a user runs them: a planner model behind
litellm (a loopback OpenAI-compatible server) drafts, is told what to repair, and the
locked LWIR is written as YAML beside its lock; it validates and `lwtool check` finds it
fresh; SIGKILL while the planner waits on its model, then the same command resumes
without asking again for the committed turn."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli
from tests.fixtures.openai_server import fixture_server
from tests.planner.test_compile_loop import GOOD, _broken

DEFINITION = """\
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: loan
description: Summarize a loan application with its credit score.
input:
  schema: {type: object, required: [applicant], properties: {applicant: {type: string}}}
output:
  schema: {type: string}
models: [{id: gpt-4o-mini, model: offline}]
tools: [creditScore]
planner: {model: planner, maxWorkflowRevisions: 2}
"""
TOOLS = ("def creditScore(args):\n    return {'score': 700}\n"
         "tools = {'creditScore': creditScore}\n")


def _submit(draft: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "submit_workflow", "arguments": json.dumps(draft)}]}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "loan.definition.yaml").write_text(DEFINITION)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "in.json").write_text('{"applicant": "Ann"}')
    (tmp_path / "models.yaml").write_text("planner: openai/gpt-4o-mini\n")
    return tmp_path


def _env(server: Any) -> dict[str, str]:
    return {"OPENAI_API_BASE": server.base_url, "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-fixture", "LWTOOL_BASH_SANDBOX": "path-check",
            "LWTOOL_BASH_PATH_CHECK_ROLES": "planner"}


def _plan_args(*extra: str) -> list[str]:
    return ["plan", "loan.definition.yaml", "-i", "in.json", "-o", "loan.lwir.yaml",
            "--tools", "tools.py:tools", "--models", "models.yaml", "--data-dir", "data",
            *extra]


def test_plan_writes_locked_yaml_that_validates(folder: Path) -> None:
    bad = _broken((["steps", 1, "with", "model"], "gpt-5"))
    with fixture_server([_submit(bad), _submit(GOOD)]) as server:
        done = run_cli(*_plan_args("--json"), cwd=folder, env=_env(server))
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["drafts"] == 2 and summary["path"] == "loan.lwir.yaml"
    assert "draft 1 not valid (1 findings: permissions.unknown_model)" in done.stderr
    assert "draft 2 accepted" in done.stderr
    offered = {t["function"]["name"]: t["function"] for t in server.requests[0]["tools"]}
    assert set(offered) == {"bash", "submit_workflow"}
    assert offered["submit_workflow"]["parameters"]["required"]  # the LWIR schema
    repair = json.loads(server.requests[1]["messages"][-1]["content"])
    assert repair["findings"][0]["pointer"] == "/steps/1/with/model"
    text = (folder / "loan.lwir.yaml").read_text()
    assert text.startswith("apiVersion: littleworkflow.dev/v0.1\nkind: Workflow\n")
    assert run_cli("validate", "loan.lwir.yaml", cwd=folder).returncode == 0
    check = run_cli("check", "loan.lwir.yaml", cwd=folder)
    assert check.returncode == 0, check.stdout + check.stderr
    lock = json.loads((folder / "loan.lwir.lock.json").read_text())
    assert summary["workflowVersionId"] in json.dumps(lock)


def test_path_check_bash_reaches_the_planner_only_when_named(folder: Path) -> None:
    env = {**_env(_Unused()), "LWTOOL_BASH_PATH_CHECK_ROLES": ""}
    with fixture_server([_submit(GOOD)]) as server:
        env.update(OPENAI_API_BASE=server.base_url, OPENAI_BASE_URL=server.base_url)
        done = run_cli(*_plan_args(), cwd=folder, env=env)
    assert done.returncode == 0, done.stderr
    assert [t["function"]["name"] for t in server.requests[0]["tools"]] == ["submit_workflow"]
    assert "no bash for the planner: path-check bash is not a sandbox" in done.stderr
    assert "LWTOOL_BASH_PATH_CHECK_ROLES" in done.stderr


class _Unused:
    base_url = "http://127.0.0.1:9/v1"


def test_run_a_definition_plans_then_runs(folder: Path) -> None:
    with fixture_server([_submit(GOOD)]) as server:
        done = run_cli("run", "loan.definition.yaml", "-i", "in.json", "--tools",
                       "tools.py:tools", "--models", "models.yaml", "--data-dir", "data",
                       "--run-id", "r1", "--json", cwd=folder, env=_env(server))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["runId"] == "r1" and result["status"] == "completed"
    assert len(server.requests) == 1  # the steps ran on the definition's slot: offline
    assert result["output"].startswith("offline")
    runs = run_cli("runs", "--data-dir", "data", "--json", cwd=folder).stdout
    assert "r1.plan" in runs and "r1" in runs


def test_plan_failures_say_why(folder: Path) -> None:
    bad = _broken((["steps", 0, "uses"], "tool.cal"))
    with fixture_server([_submit(bad)] * 3) as server:
        done = run_cli(*_plan_args(), cwd=folder, env=_env(server))
    assert done.returncode == 1
    assert "planner_validation_exhausted" in done.stderr and "after 3 drafts" in done.stderr
    assert not (folder / "loan.lwir.yaml").exists()
    lwir = run_cli("plan", "in.json", "-i", "in.json", "-o", "x.yaml", cwd=folder)
    assert lwir.returncode != 0


def test_kill_while_planning_then_resume_without_asking_again(folder: Path) -> None:
    bad = _broken((["steps", 1, "with", "model"], "gpt-5"))
    with fixture_server([_submit(bad), _submit(GOOD)], delay=0.0) as server:
        env = {**os.environ, **_env(server), "PYTHONPATH": str(ROOT)}
        server.delays = {2: 30.0}  # the second request hangs: kill while waiting on it
        proc = subprocess.Popen([sys.executable, "-m", "lwtool", *_plan_args("--run-id", "pk")],
                                cwd=folder, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(server.requests) < 2:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        server.delays = {}
        server.replies.insert(0, _submit(GOOD))  # the killed request's answer, asked again
        done = run_cli(*_plan_args("--run-id", "pk"), cwd=folder, env=_env(server))
    assert done.returncode == 0, done.stderr
    # Three requests: turn 1 once, turn 2 twice (in flight at the kill); turn 1 never again.
    assert len(server.requests) == 3
    assert len(server.requests[2]["messages"]) == len(server.requests[1]["messages"])
    assert (folder / "loan.lwir.yaml").exists()


def test_a_planned_runs_budget_counts_its_planner_session(folder: Path) -> None:
    (folder / "models.yaml").write_text("planner: openai/gpt-4o-mini\n"
                                        "gpt-4o-mini: openai/gpt-4o-mini\n")
    with fixture_server([_submit(GOOD), "never asked"]) as server:  # 11 + 7 tokens each
        done = run_cli("run", "loan.definition.yaml", "-i", "in.json", "--tools",
                       "tools.py:tools", "--models", "models.yaml", "--data-dir", "data",
                       "--run-id", "r1", "--max-tokens", "10", "--json", cwd=folder,
                       env=_env(server))
    assert done.returncode == 1, done.stderr
    failed = json.loads(done.stdout)
    assert (failed["causeCode"], failed["failedStepPath"]) == ("budget_exceeded", "summarize")
    assert "18 tokens used of 10" in failed["message"]  # the planner's reply
    assert len(server.requests) == 1


def test_a_fixed_plan_is_written_as_it_is_and_its_ignored_settings_are_warned(
        tmp_path: Path) -> None:
    """`lwtool plan` on a definition with `planner.plan` writes that plan (no planner, no
    model slot to map); `planner.maxOuterCycles` beside it is a warning finding."""
    shutil.copy(ROOT / "examples" / "candidate-review.lwir.yaml", tmp_path / "cr.lwir.yaml")
    (tmp_path / "fixed.definition.yaml").write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\nid: fixed\n"
        "planner: {plan: cr.lwir.yaml, maxOuterCycles: 3}\n")
    (tmp_path / "in.json").write_text("{}")
    done = run_cli("plan", "fixed.definition.yaml", "-i", "in.json", "-o", "out.lwir.yaml",
                   "--json", "--data-dir", "d", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    version = run_cli("hash", "cr.lwir.yaml", cwd=tmp_path).stdout.strip()
    assert (summary["workflowVersionId"], summary["fixedPlan"], summary["plannerRunId"]) == \
        (version, "cr.lwir.yaml", None)
    assert run_cli("hash", "out.lwir.yaml", cwd=tmp_path).stdout.strip() == version
    assert (tmp_path / "out.lwir.lock.json").exists() and not (tmp_path / "d").exists()
    assert "has a fixed plan (planner.plan: cr.lwir.yaml)" in done.stderr
    found = run_cli("validate", "fixed.definition.yaml", cwd=tmp_path)
    assert found.returncode == 0  # a warning: the file is valid
    assert "4:31: warning definition.ignored_with_fixed_plan planner.maxOuterCycles is " \
        "ignored" in found.stdout
