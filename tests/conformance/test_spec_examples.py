"""The spec's own LWIR examples (copied from shared/conformance/spec-examples as data):
every one validates, and the runnable ones run on the offline model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, local_world, run_workflow
from lwtool.compile import compile_file

HERE = Path(__file__).parent / "spec_examples"
EXAMPLES = sorted(HERE.glob("*.lwir.json"))
OFFLINE = {"gpt-4o-mini": "offline"}



def test_every_spec_example_is_here() -> None:
    assert {p.name for p in EXAMPLES} == {
        "ai-generate-summarize.lwir.json", "bounded-parallel.lwir.json",
        "code-run-filter.lwir.json", "code-run-fixer.lwir.json",
        "repair-classify.lwir.json", "worked-example-candidate-review.lwir.json"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_spec_example_validates(path: Path) -> None:
    compiled = compile_file(path)
    assert [f"{f.code} {f.message}" for f in compiled.findings] == []
    assert compiled.ok and compiled.kind == "Workflow"


def _run(path: Path, run_input: Any, tmp_path: Path, **tools: Any) -> tuple[Any, Any]:
    world = local_world(tmp_path / "data")
    doc = json.loads(path.read_text())
    return world, asyncio.run(run_workflow(doc, run_input, world=world, tools=tools,
                                           models=OFFLINE, run_id="run_spec"))


def test_ai_generate_summarize_runs(tmp_path: Path) -> None:
    def credit_score(args: Any) -> Any:
        return {"score": 712 if args["applicant"]["name"] == "Ada" else 500}

    world, result = _run(HERE / "ai-generate-summarize.lwir.json",
                         {"applicant": {"name": "Ada"}}, tmp_path, creditScore=credit_score)
    assert isinstance(result["output"], str) and result["output"].startswith("offline answer")
    called = world.events("run_spec", ["harness.model.called"])
    messages = called[0].payload["request"]["messages"]
    assert messages[0] == {"role": "system",
                           "content": "You are a loan analyst. Answer in two sentences."}
    assert messages[1]["content"] == ("Summarize the application. Credit score: 712\n\n"
                                      'Input:\n{"applicant": {"name": "Ada"}}')


def test_bounded_parallel_runs(tmp_path: Path) -> None:
    candidates = [{"candidateId": f"c{i}", "name": f"N{i}"} for i in range(3)]
    _, result = _run(HERE / "bounded-parallel.lwir.json",
                     {"candidates": candidates, "jobRequirement": "Python"}, tmp_path)
    assert len(result["output"]) == 3
    assert all(set(o) == {"candidateId", "score", "reason"} for o in result["output"])


def test_repair_classify_runs(tmp_path: Path) -> None:
    _, result = _run(HERE / "repair-classify.lwir.json", {}, tmp_path)
    assert isinstance(result["output"]["label"], str)


def test_worked_example_runs_its_loop_to_the_bound(tmp_path: Path) -> None:
    """`review` has no output mode (text), so `steps.review.lastOutput.passed` is null
    with any model: every branch goes round until worker's maxVisits (5) is spent, the
    decision `route` (no maxVisits, as in the spec) runs once per round as
    `route.visit[N]`, and with no branch succeeding the all_settled run fails with
    max_visits_exceeded, naming every branch."""
    world = local_world(tmp_path / "data")
    doc = json.loads((HERE / "worked-example-candidate-review.lwir.json").read_text())
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(doc, {"candidates": [{"id": "a"}, {"id": "b"}]},
                                 world=world, models=OFFLINE, run_id="run_spec"))
    assert info.value.cause_code == "max_visits_exceeded"
    paths = [e.step_path for e in world.events("run_spec", ["StepCompleted"])]
    for key in ("a", "b"):
        mine = [p for p in paths if p.startswith(f"review-cands[{key}].")]
        assert mine == [f"review-cands[{key}].{s}.visit[{n}]"
                        for n in range(5) for s in ("worker", "review", "route")]
    failed = world.events("run_spec", ["RunFailed"])[0].payload["failedBranches"]
    assert [(f["itemKey"], f["failedStepPath"]) for f in failed] == [
        ("a", "review-cands[a].worker.visit[5]"), ("b", "review-cands[b].worker.visit[5]")]


def test_code_run_filter_runs_in_the_sandbox(tmp_path: Path) -> None:
    def fetch_candidates(args: Any) -> Any:
        assert args == {"jobId": "j1"}
        return [{"id": "a", "score": 0.9}, {"id": "b", "score": 0.5}, {"id": "c", "score": 0.81}]

    world, result = _run(HERE / "code-run-filter.lwir.json", {"jobId": "j1"}, tmp_path,
                         fetchCandidates=fetch_candidates)
    assert result["output"] == [{"id": "a", "score": 0.9}, {"id": "c", "score": 0.81}]
    from_code = [e.payload for e in world.events("run_spec", ["harness.tool_call.started"])]
    assert from_code == [{"callId": "filter-top-candidates#a1.code.1", "caller": "code",
                          "toolName": "fetchCandidates", "args": {"jobId": "j1"}}]


def test_code_run_fixer_example_runs_when_its_code_works(tmp_path: Path) -> None:
    world, result = _run(HERE / "code-run-fixer.lwir.json", {"signals": [1, 2, 3]}, tmp_path)
    assert result["output"] == {"score": 0.3}
    assert world.events("run_spec", ["harness.session.started"])[0].payload["role"] == "worker"
