"""The offline model as an orchestrator does real work: `lwtool orchestrate
examples/pipeline/numbers.pipeline.yaml --offline` plans `double` once and runs it for
every number as a sub-run, answering their outputs; the same --run-id answers again
from the log without a new sub-run. How items are given to a workflow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lwtool.orchestrate.offline import inputs_for
from lwtool.orchestrate.pipeline import Available
from tests.conftest import ROOT, run_cli

PIPELINE = ROOT / "examples" / "pipeline"


def test_the_example_pipeline_runs_offline_with_sub_runs(tmp_path: Path) -> None:
    args = ["orchestrate", str(PIPELINE / "numbers.pipeline.yaml"), "-i",
            str(PIPELINE / "input.json"), "--offline", "--tools",
            f"{PIPELINE / 'tools.py'}:tools", "--data-dir", str(tmp_path / "d"), "--run-id",
            "p", "--json"]
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert json.loads(result["output"]) == {"double": [{"value": 2}, {"value": 4},
                                                       {"value": 6}]}
    assert [(s["runId"], s["status"]) for s in result["subRuns"]] == [
        ("p.sub.1.0", "completed"), ("p.sub.1.1", "completed"), ("p.sub.1.2", "completed")]
    listed = json.loads(run_cli("runs", "--json", "--data-dir", str(tmp_path / "d")).stdout)
    assert sorted((r["runId"], r["workflow"]) for r in listed) == [
        ("p", "numbers"), ("p.sub.1.0", "double"), ("p.sub.1.1", "double"),
        ("p.sub.1.2", "double")]
    again = run_cli(*args)
    assert again.returncode == 0 and json.loads(again.stdout)["output"] == result["output"]
    assert len(json.loads(run_cli("runs", "--json", "--data-dir",
                                  str(tmp_path / "d")).stdout)) == 4


SCHEMA = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}


@pytest.mark.parametrize(("schema", "run_input", "expected"), [
    (SCHEMA, {"numbers": [1, 2]}, [{"n": 1}, {"n": 2}]),  # wrapped in its one property
    (SCHEMA, [{"n": 5}, {"n": 6}], [{"n": 5}, {"n": 6}]),  # taken as they are
    (SCHEMA, {"n": 9}, [{"n": 9}]),  # no list: the input, once
    ({"type": "object", "required": ["a", "b"]}, {"xs": [1]}, [{"xs": [1]}]),
    (None, {"xs": ["a", "b"]}, ["a", "b"]),  # no schema takes anything
])
def test_how_items_reach_a_workflow(schema: object, run_input: object,
                                    expected: list[object]) -> None:
    definition = {"id": "w", **({"input": {"schema": schema}} if schema else {})}
    assert inputs_for(Available(definition, ROOT, "sha256:0"), run_input) == expected
