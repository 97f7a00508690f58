"""The outer loop always ends ("Definitions honoured end to end", item 2): a cycle whose
planning fails, a supervise that raises, or an answer other than done/continue end the
loop run as failed (RunFailed with the cause, the manifest says failed, outerLoopId in
--json); `replay LOOP` and `report LOOP` give the loop's real result and its cost
(planners and supervising model included); cycle runs name their loop. A planned run's
usage includes its planner session's (item 6), split per role by `report`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fixtures.openai_server import fixture_server
from tests.planner.test_compile_loop import GOOD, _broken
from tests.planner.test_outer_loop import (  # noqa: F401 - folder is a fixture
    SUPERVISED,
    _args,
    _loop_env,
    folder,
    supervising_model,
)
from tests.planner.test_plan_cli import _env, _submit


def _events(work: Path, run_id: str) -> list[dict[str, object]]:
    out = run_cli("events", run_id, "--data-dir", "data", "--json", cwd=work).stdout
    return [json.loads(line) for line in out.splitlines()]


def _ended_failed(work: Path, cause: str) -> None:
    kinds = [e["type"] for e in _events(work, "loop")]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFailed", kinds
    assert _events(work, "loop")[-1]["payload"]["causeCode"] == cause
    manifest = json.loads((work / "data/outer-loops/loop.json").read_text())
    assert manifest["status"] == "failed" and manifest["pendingCycleRunId"] is None
    runs = json.loads(run_cli("runs", "--data-dir", "data", "--json", cwd=work).stdout)
    assert {r["runId"]: r["status"] for r in runs}["loop"] == "failed"
    replay = run_cli("replay", "loop", "--data-dir", "data", "--json", cwd=work)
    assert replay.returncode == 1 and json.loads(replay.stdout)["causeCode"] == cause
    assert json.loads(replay.stdout)["outerLoopId"] == "loop"


def test_a_cycle_whose_planning_fails_ends_the_loop(folder: Path) -> None:  # noqa: F811
    bad = _broken((["steps", 0, "uses"], "tool.cal"))
    with fixture_server([_submit(bad)] * 3) as server:
        done = run_cli(*_args(), cwd=folder, env=_loop_env(server, folder, 2))
    assert done.returncode == 1, done.stderr
    failure = json.loads(done.stdout)
    assert failure["causeCode"] == "planner_validation_exhausted"
    assert failure["outerLoopId"] == "loop"
    _ended_failed(folder, "planner_validation_exhausted")


@pytest.mark.parametrize(("body", "cause", "says"), [
    ("raise RuntimeError('judge is down')", "step_failed", "supervise raised RuntimeError"),
    ("return {'kind': 'maybe'}", "runtime_config_error", "supervise must return"),
])
def test_a_supervise_that_raises_or_answers_nonsense_ends_the_loop(
        folder: Path, body: str, cause: str, says: str) -> None:  # noqa: F811
    (folder / "supervise.py").write_text(f"def supervise(context):\n    {body}\n")
    with fixture_server([_submit(GOOD)]) as server:
        done = run_cli(*_args(), cwd=folder, env=_loop_env(server, folder, 2))
    assert done.returncode == 1, done.stderr
    failure = json.loads(done.stdout)
    assert failure["causeCode"] == cause and failure["outerLoopId"] == "loop"
    assert says in failure["message"]
    _ended_failed(folder, cause)
    again = run_cli(*_args(), cwd=folder, env=_loop_env(server, folder, 2))
    assert again.returncode == 1 and json.loads(again.stdout)["causeCode"] == cause


def test_replay_and_report_of_a_loop_give_its_result_and_cost(folder: Path) -> None:  # noqa: F811
    supervising_model(folder)
    with fixture_server(SUPERVISED) as server:
        done = run_cli(*_args(), cwd=folder, env=_env(server))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    replay = run_cli("replay", "loop", "--data-dir", "data", "--json", cwd=folder)
    assert replay.returncode == 0, replay.stderr
    replayed = json.loads(replay.stdout)
    assert replayed["output"] == "approved" and replayed["outerLoopId"] == "loop"
    assert replayed["usage"] == result["usage"]
    usage = result["usage"]
    assert usage["costUsd"] > 0
    report = json.loads(run_cli("report", "loop", "--data-dir", "data", "--json",
                                cwd=folder).stdout)
    assert report["run"] == usage
    roles = report["byRole"]  # 2 planner and 2 supervisor calls of 11 + 7 tokens each
    assert set(roles) == {"worker", "planner", "supervisor"}
    assert [(roles[r]["inputTokens"], roles[r]["outputTokens"], roles[r]["pricedCalls"])
            for r in ("planner", "supervisor")] == [(22, 14, 2), (22, 14, 2)]
    assert roles["worker"]["unpricedCalls"] == 2 and roles["worker"]["costUsd"] is None
    assert usage["inputTokens"] == sum(t["inputTokens"] for t in roles.values())
    assert {r["runId"] for r in report["runs"]} == {"loop.c1", "loop.c1.plan", "loop.c2",
                                                   "loop.c2.plan"}
    text_report = run_cli("report", "loop", "--data-dir", "data", cwd=folder).stdout
    assert "role planner" in text_report and "role supervisor" in text_report
    started = _events(folder, "loop.c2")[0]["payload"]
    assert started["links"] == {"outerLoopId": "loop", "cycleNumber": 2,
                                "plannerRunId": "loop.c2.plan"}


def test_a_planned_runs_usage_includes_its_planner(tmp_path: Path) -> None:
    from tests.planner.test_plan_cli import DEFINITION, TOOLS

    (tmp_path / "loan.definition.yaml").write_text(DEFINITION)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "in.json").write_text('{"applicant": "Ann"}')
    (tmp_path / "models.yaml").write_text("planner: openai/gpt-4o-mini\n")
    with fixture_server([_submit(GOOD)]) as server:
        server.usage = {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010,
                        "prompt_tokens_details": {"cached_tokens": 800}}
        done = run_cli("run", "loan.definition.yaml", "-i", "in.json", "--tools",
                       "tools.py:tools", "--models", "models.yaml", "--data-dir", "data",
                       "--run-id", "r1", "--json", cwd=tmp_path, env=_env(server))
    assert done.returncode == 0, done.stderr
    usage = json.loads(done.stdout)["usage"]
    assert usage["inputTokens"] > 1000 and usage["cachedInputTokens"] == 800
    # gpt-4o-mini: $0.15/M input, $0.075/M cached input, $0.60/M output
    assert usage["costUsd"] == pytest.approx((200 * 0.15 + 800 * 0.075 + 10 * 0.6) / 1e6)
    report = json.loads(run_cli("report", "r1", "--data-dir", "data", "--json",
                                cwd=tmp_path).stdout)
    assert set(report["byRole"]) == {"worker", "planner"}
    assert report["byRole"]["planner"]["cachedInputTokens"] == 800
