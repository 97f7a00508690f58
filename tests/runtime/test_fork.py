"""`lwtool fork RUN --from STEP`: a new run of the same version keeps the results of the
steps that do not depend on STEP (by the graph) and runs STEP and what is downstream
again, with a new input where given; the original run's log is untouched, the fork's
RunStarted says what it was forked from, and a fork killed mid-way resumes with replay."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.runtime.cli_runs import calls, events, lwtool

TOOLS = '''\
import os
from pathlib import Path

def mark(args):
    with open(Path(os.environ["LWTOOL_TEST_DIR"]) / "calls.log", "a") as log:
        log.write(args["name"] + "\\n")
    return {"value": f"{args['name']}({args.get('value', '')})"}

tools = {"mark": mark}
'''

WORKFLOW = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: diamond}
permissions: {tools: [mark]}
steps:
  - {id: a, uses: tool.call, with: {tool: mark, args: {name: a, value: "{{ input.v }}"}}}
  - {id: b, uses: tool.call, needs: [a],
     with: {tool: mark, args: {name: b, value: "{{ steps.a.output.value }}"}}}
  - {id: c, uses: tool.call, with: {tool: mark, args: {name: c, value: "{{ input.v }}"}}}
  - id: d
    uses: tool.call
    needs: [b, c]
    with:
      tool: mark
      args: {name: d, value: "{{ steps.b.output.value }}+{{ steps.c.output.value }}"}
"""


@pytest.fixture()
def folder(tmp_path: Path, world_kind: str) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "wf.lwir.yaml").write_text(WORKFLOW)
    (tmp_path / "in.json").write_text('{"v": "one"}')
    (tmp_path / "two.json").write_text('{"v": "two"}')
    return tmp_path


def test_a_fork_reruns_only_what_depends_on_the_step(folder: Path) -> None:
    first = lwtool(folder, "run", "wf.lwir.yaml", "-i", "in.json", "--tools",
                    "tools.py:tools", "--run-id", "orig", "--json")
    assert first.returncode == 0, first.stderr  # type: ignore[attr-defined]
    before = events(folder, "orig")
    forked = lwtool(folder, "fork", "orig", "--from", "b", "--input", "two.json",
                     "--run-id", "f1", "--tools", "tools.py:tools", "--json")
    assert forked.returncode == 0, forked.stderr  # type: ignore[attr-defined]
    # a and c keep their results (c read the input, but does not depend on b)
    assert json.loads(forked.stdout)["output"] == {  # type: ignore[attr-defined]
        "value": "d(b(a(one))+c(one))"}
    assert calls(folder) == Counter({"a": 1, "c": 1, "b": 2, "d": 2})
    assert events(folder, "orig") == before  # the original is untouched
    started = events(folder, "f1")[0]
    assert started["payload"]["links"] == {  # type: ignore[index]
        "forkedFromRunId": "orig", "forkedFromStep": "b"}


def test_a_fork_killed_mid_way_resumes_with_replay(folder: Path) -> None:
    assert lwtool(folder, "run", "wf.lwir.yaml", "-i", "in.json", "--tools",
                   "tools.py:tools", "--run-id", "orig").returncode == 0  # type: ignore
    killed = lwtool(folder, "fork", "orig", "--from", "a", "--run-id", "f2", "--tools",
                     "tools.py:tools", LWTOOL_FAULT_KILL_AFTER="StepCompleted@b")
    assert killed.returncode == -9  # type: ignore[attr-defined]
    resumed = lwtool(folder, "replay", "f2", "--tools", "tools.py:tools", "--json")
    assert resumed.returncode == 0, resumed.stderr  # type: ignore[attr-defined]
    assert json.loads(resumed.stdout)["output"] == {  # type: ignore[attr-defined]
        "value": "d(b(a(one))+c(one))"}
    counted = calls(folder)
    assert (counted["a"], counted["b"], counted["c"], counted["d"]) == (2, 2, 1, 2)


def test_a_fork_from_an_unknown_step_is_refused(folder: Path) -> None:
    assert lwtool(folder, "run", "wf.lwir.yaml", "-i", "in.json", "--tools",
                   "tools.py:tools", "--run-id", "orig").returncode == 0  # type: ignore
    refused = lwtool(folder, "fork", "orig", "--from", "zz", "--run-id", "f3",
                      "--tools", "tools.py:tools")
    assert refused.returncode == 2  # type: ignore[attr-defined]
    assert "has no top-level step 'zz' (its steps: a, b, c, d)" in refused.stderr  # type: ignore
    listed = lwtool(folder, "runs", "--json").stdout  # type: ignore[attr-defined]
    assert [r["runId"] for r in json.loads(listed)] == ["orig"]  # nothing written


@pytest.mark.parametrize("inside", ["b[1].x", "b.visit[2]"])
def test_a_fork_from_inside_a_step_is_refused_naming_its_top_level_step(
        folder: Path, inside: str) -> None:
    assert lwtool(folder, "run", "wf.lwir.yaml", "-i", "in.json", "--tools",
                  "tools.py:tools", "--run-id", "orig").returncode == 0  # type: ignore
    refused = lwtool(folder, "fork", "orig", "--from", inside, "--run-id", "f4",
                     "--tools", "tools.py:tools")
    assert refused.returncode == 2  # type: ignore[attr-defined]
    assert refused.stderr == (  # type: ignore[attr-defined]
        f"lwtool: run f4: '{inside}' is a part of the top-level step 'b' (a branch or a loop "
        "visit); a fork runs whole top-level steps again: fork from 'b' to run it, all of "
        "it, and what follows again\n")
    listed = lwtool(folder, "runs", "--json").stdout  # type: ignore[attr-defined]
    assert [r["runId"] for r in json.loads(listed)] == ["orig"]  # nothing written
