"""`lwtool retry RUN`: a failed run's failed step gets new attempts (its retry policy
afresh) and what follows runs; committed steps are not called again; the log shows the
retry. Refused for a completed or running run with nothing written. A retry killed
mid-way resumes with `lwtool replay`. In the local world and in PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.runtime.cli_runs import LOGGING_TOOLS as TOOLS
from tests.runtime.cli_runs import calls, events, lwtool

WORKFLOW = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: three}
permissions: {tools: [step]}
steps:
  - {id: a, uses: tool.call, with: {tool: step, args: {name: a, value: "{{ input.v }}"}}}
  - id: fan
    uses: parallel
    needs: [a]
    with: {items: [x, y], maxBranches: 2, maxConcurrency: 2, failureMode: all_settled}
    steps:
      - id: b
        uses: tool.call
        retry: {maxAttempts: 2, backoffMs: 1}
        with: {tool: step, args: {name: "b{{ item }}", value: "{{ item }}"}}
  - id: c
    uses: tool.call
    needs: [a, fan]
    with: {tool: step, args: {name: c, value: "{{ steps.a.output.value }}"}}
"""


@pytest.fixture()
def folder(tmp_path: Path, world_kind: str) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "wf.lwir.yaml").write_text(WORKFLOW)
    (tmp_path / "in.json").write_text('{"v": "s"}')
    return tmp_path


def types_of(folder: Path, run_id: str) -> list[str]:
    return [e["type"] for e in events(folder, run_id)]


def test_a_failed_run_is_retried_from_its_failure(folder: Path) -> None:
    (folder / "break-c").write_text("")
    failed = lwtool(folder, "run", "wf.lwir.yaml", "-i", "in.json", "--tools",
                     "tools.py:tools", "--run-id", "r1")
    assert failed.returncode == 1, failed.stderr  # type: ignore[attr-defined]
    before = types_of(folder, "r1")
    refused = lwtool(folder, "retry", "r1")  # without its tools: refused, naming them
    assert refused.returncode == 2 and "tool 'step' that is not provided" in \
        refused.stderr  # type: ignore[attr-defined]
    assert types_of(folder, "r1") == before  # nothing written
    (folder / "break-c").unlink()
    done = lwtool(folder, "retry", "r1", "--tools", "tools.py:tools", "--json")
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    assert json.loads(done.stdout)["output"] == {"value": "s-a-c"}  # type: ignore[attr-defined]
    counted = calls(folder)
    assert (counted["a"], counted["bx"], counted["by"]) == (1, 1, 1)  # committed: not again
    assert counted["c"] == 2  # the failed step, and its new attempt
    types = types_of(folder, "r1")
    assert types.count("RunFailed") == 1 and types.count("RunRetried") == 1
    assert types[-1] == "RunCompleted"
    listed = lwtool(folder, "runs").stdout  # type: ignore[attr-defined]
    assert listed.splitlines()[1].split()[:2] == ["r1", "completed"]


def test_a_settled_groups_failed_branch_stays_settled(folder: Path) -> None:
    (folder / "break-by").write_text("")
    (folder / "break-c").write_text("")  # c runs after the settled group, and fails
    assert lwtool(folder, "run", "wf.lwir.yaml", "-i", "in.json", "--tools",
                   "tools.py:tools", "--run-id", "r2").returncode == 1  # type: ignore
    assert calls(folder)["by"] == 1  # not transient: final at once
    (folder / "break-c").unlink()
    done = lwtool(folder, "retry", "r2", "--tools", "tools.py:tools")
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    assert calls(folder)["by"] == 1  # the group completed (all_settled): kept


def test_retry_is_refused_for_a_completed_or_running_run(folder: Path) -> None:
    assert lwtool(folder, "run", "wf.lwir.yaml", "-i", "in.json", "--tools",
                   "tools.py:tools", "--run-id", "ok").returncode == 0  # type: ignore
    before = types_of(folder, "ok")
    again = lwtool(folder, "retry", "ok", "--tools", "tools.py:tools")
    assert again.returncode == 2  # type: ignore[attr-defined]
    assert "run ok completed; there is nothing to retry" in again.stderr  # type: ignore
    assert types_of(folder, "ok") == before  # nothing written
    cut = lwtool(folder, "run", "wf.lwir.yaml", "-i", "in.json", "--tools",
                  "tools.py:tools", "--run-id", "cut",
                  LWTOOL_FAULT_KILL_AFTER="StepCompleted@a")
    assert cut.returncode == -9  # type: ignore[attr-defined]
    running = lwtool(folder, "retry", "cut", "--tools", "tools.py:tools")
    assert running.returncode == 2  # type: ignore[attr-defined]
    assert "run cut has not failed" in running.stderr and \
        "lwtool replay cut" in running.stderr  # type: ignore[attr-defined]
    missing = lwtool(folder, "retry", "nope")
    assert missing.returncode == 2  # type: ignore[attr-defined]


def test_a_retry_killed_mid_way_resumes_with_replay(folder: Path) -> None:
    (folder / "break-c").write_text("")
    assert lwtool(folder, "run", "wf.lwir.yaml", "-i", "in.json", "--tools",
                   "tools.py:tools", "--run-id", "k").returncode == 1  # type: ignore
    (folder / "break-c").unlink()
    killed = lwtool(folder, "retry", "k", "--tools", "tools.py:tools",
                     LWTOOL_FAULT_KILL_AFTER="StepCompleted@c")
    assert killed.returncode == -9  # type: ignore[attr-defined]
    resumed = lwtool(folder, "replay", "k", "--tools", "tools.py:tools", "--json")
    assert resumed.returncode == 0, resumed.stderr  # type: ignore[attr-defined]
    assert json.loads(resumed.stdout)["output"] == {"value": "s-a-c"}  # type: ignore
    assert calls(folder)["c"] == 2  # once failed, once done: not again on replay


def test_a_retried_step_gets_its_retry_policy_afresh(folder: Path) -> None:
    (folder / "tools.py").write_text(TOOLS.replace(
        'raise RuntimeError(f"{args[\'name\']} is broken")',
        'from lwtool import TransientError\n'
        '        raise TransientError(f"{args[\'name\']} is busy")'))
    (folder / "break-c").write_text("")  # transient: c's default policy, 3 attempts
    assert lwtool(folder, "run", "wf.lwir.yaml", "-i", "in.json", "--tools",
                   "tools.py:tools", "--run-id", "t").returncode == 1  # type: ignore
    assert calls(folder)["c"] == 3
    again = lwtool(folder, "retry", "t", "--tools", "tools.py:tools")
    assert again.returncode == 1  # type: ignore[attr-defined]
    assert calls(folder)["c"] == 3 + 3  # three attempts afresh (numbered 4 to 6)
    (folder / "break-c").unlink()
    assert lwtool(folder, "retry", "t", "--tools", "tools.py:tools").returncode == 0  # type: ignore
    assert calls(folder)["c"] == 7 and calls(folder)["a"] == 1
