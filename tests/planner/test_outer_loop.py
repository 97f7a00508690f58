"""The outer loop through the CLI: supervise (a `module:function` named in the
definition) after each cycle, the cycle context in the planner's request
(isFinalCycle, priorCycles with the prompt note), OuterLoopCycleCompleted events,
`outer-loops/<id>.json`, `outer_loop_exhausted`, and a kill between cycles that
resumes into the next cycle's planning without redoing the first."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli
from tests.fixtures.openai_server import fixture_server
from tests.planner.test_compile_loop import GOOD
from tests.planner.test_plan_cli import DEFINITION, TOOLS, _env, _submit

SUPERVISE = """\
import os
from pathlib import Path

def supervise(context):
    n = len(context["cycles"])
    with open(os.environ["SUPERVISE_LOG"], "a") as fh:
        fh.write(f"{n}\\n")
    if n < int(os.environ.get("DONE_AT", "2")):
        return {"kind": "continue", "promptNote": f"more detail after cycle {n}"}
    return {"kind": "done", "finalOutput": {"cycles": n,
                                            "last": context["cycles"][-1]["output"]}}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    text = DEFINITION.replace(
        "planner: {model: planner, maxWorkflowRevisions: 2}",
        "planner: {model: planner, maxOuterCycles: 3, supervise: 'supervise.py:supervise'}")
    (tmp_path / "loan.definition.yaml").write_text(text)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "supervise.py").write_text(SUPERVISE)
    (tmp_path / "in.json").write_text('{"applicant": "Ann"}')
    (tmp_path / "models.yaml").write_text("planner: openai/gpt-4o-mini\n")
    return tmp_path


def _args(*extra: str) -> list[str]:
    return ["run", "loan.definition.yaml", "-i", "in.json", "--tools", "tools.py:tools",
            "--models", "models.yaml", "--data-dir", "data", "--run-id", "loop", "--json",
            *extra]


def _loop_env(server: Any, folder: Path, done_at: int) -> dict[str, str]:
    return {**_env(server), "SUPERVISE_LOG": str(folder / "supervise.log"),
            "DONE_AT": str(done_at)}


def _request(server: Any, index: int) -> dict[str, Any]:
    content = server.requests[index]["messages"][1]["content"]
    return json.loads(content.split("\n\n", 1)[1])


def test_cycles_until_supervise_is_done(folder: Path) -> None:
    with fixture_server([_submit(GOOD), _submit(GOOD)]) as server:
        done = run_cli(*_args(), cwd=folder, env=_loop_env(server, folder, 2))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outerLoopId"] == "loop" and result["runId"] == "loop.c2"
    assert result["output"]["cycles"] == 2 and result["output"]["last"].startswith("offline")
    first, second = _request(server, 0)["outerLoop"], _request(server, 1)["outerLoop"]
    assert (first["cycleNumber"], first["isFinalCycle"], first["priorCycles"]) == (1, False, [])
    assert second["cycleNumber"] == 2 and second["maxCycles"] == 3
    assert second["priorCycles"][0]["decision"] == {
        "kind": "continue", "promptNote": "more detail after cycle 1"}
    events = run_cli("events", "loop", "--data-dir", "data", "--json", cwd=folder).stdout
    types = [json.loads(line)["type"] for line in events.splitlines()]
    assert types == ["RunStarted", "OuterLoopCycleCompleted", "OuterLoopCycleCompleted",
                     "RunCompleted"]
    manifest = json.loads((folder / "data/outer-loops/loop.json").read_text())
    assert manifest["status"] == "completed" and manifest["pendingCycleRunId"] is None
    assert [c["runId"] for c in manifest["cycles"]] == ["loop.c1", "loop.c2"]


def test_continue_on_the_final_cycle_is_outer_loop_exhausted(folder: Path) -> None:
    with fixture_server([_submit(GOOD)] * 3) as server:
        done = run_cli(*_args(), cwd=folder, env=_loop_env(server, folder, 99))
    assert done.returncode == 1
    failure = json.loads(done.stdout)
    assert failure["causeCode"] == "outer_loop_exhausted" and failure["outerLoopId"] == "loop"
    assert failure["lastCycleOutput"].startswith("offline")
    assert _request(server, 2)["outerLoop"]["isFinalCycle"] is True
    assert (folder / "supervise.log").read_text().split() == ["1", "2", "3"]


def test_kill_between_cycles_resumes_into_the_next_planning(folder: Path) -> None:
    with fixture_server([_submit(GOOD), _submit(GOOD)]) as server:
        env = {**os.environ, **_loop_env(server, folder, 2), "PYTHONPATH": str(ROOT)}
        server.delays = {2: 30.0}  # cycle 2's planner waits on its model: kill it there
        proc = subprocess.Popen([sys.executable, "-m", "lwtool", *_args()], cwd=folder,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        deadline = time.monotonic() + 60
        while len(server.requests) < 2:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        manifest = json.loads((folder / "data/outer-loops/loop.json").read_text())
        assert manifest["pendingCycleRunId"] == "loop.c2" and len(manifest["cycles"]) == 1
        server.delays = {}
        server.replies.insert(0, _submit(GOOD))
        done = run_cli(*_args(), cwd=folder, env=_loop_env(server, folder, 2))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"]["cycles"] == 2
    assert len(server.requests) == 3  # cycle 1's planner was not asked again
    assert (folder / "supervise.log").read_text().split() == ["1", "2"]


SUPERVISED = [_submit(GOOD), '{"kind": "continue", "promptNote": "cite the score"}',
              _submit(GOOD), '{"kind": "done", "finalOutput": "approved"}']


def supervising_model(folder: Path) -> None:
    """The definition's supervise becomes the `judge` slot (a model behind litellm)."""
    text = (folder / "loan.definition.yaml").read_text().replace(
        "supervise: 'supervise.py:supervise'", "supervise: {model: judge}")
    (folder / "loan.definition.yaml").write_text(text)
    (folder / "models.yaml").write_text("planner: openai/gpt-4o-mini\n"
                                        "judge: openai/gpt-4o-mini\n")


def test_a_supervising_model(folder: Path) -> None:
    supervising_model(folder)
    with fixture_server(SUPERVISED) as server:
        done = run_cli(*_args(), cwd=folder, env=_env(server))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["output"] == "approved" and len(result["cycles"]) == 2
    asked = json.loads(server.requests[1]["messages"][-1]["content"])
    assert asked["cycles"][0]["runId"] == "loop.c1" and asked["goal"]
    assert _request(server, 2)["outerLoop"]["priorCycles"][0]["decision"]["promptNote"] == \
        "cite the score"
