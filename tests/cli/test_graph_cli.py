"""`lwtool graph`: Mermaid and DOT of the examples, step statuses from a run, and the
refusals (an invalid file, a definition, an unknown run)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lwtool.graph import build, mermaid, with_run
from lwtool.source.loader import load_text
from lwtool.validate.context import Context
from lwtool.world.base import Event
from tests.conftest import ROOT, run_cli

EXAMPLES = ["candidate-review.lwir.yaml", "refine-loop.lwir.yaml", "filter-candidates.lwir.json"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_mermaid_of_the_examples(name: str, snapshot) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("graph", f"examples/{name}")
    assert result.returncode == 0, result.stderr
    assert result.stdout == snapshot


@pytest.mark.skipif(shutil.which("dot") is None,
                    reason="Graphviz is not installed (.ci/run installs Debian's graphviz)")
@pytest.mark.parametrize("name", EXAMPLES)
def test_dot_of_the_examples_renders_in_graphviz(name: str) -> None:
    result = run_cli("graph", f"examples/{name}", "--format", "dot")
    assert result.returncode == 0, result.stderr
    svg = subprocess.run(["dot", "-Tsvg"], input=result.stdout, capture_output=True,
                         text=True, timeout=60)
    assert svg.returncode == 0 and svg.stderr == "", svg.stderr
    assert "<svg" in svg.stdout


def test_statuses_and_visits_of_a_finished_run(tmp_path: Path) -> None:
    ran = run_cli("run", "examples/candidate-review.lwir.yaml", "--input",
                  "examples/inputs/candidate-review.json", "--models",
                  "examples/models.offline.yaml", "--data-dir", str(tmp_path), "--run-id", "r1")
    assert ran.returncode == 0, ran.stderr
    result = run_cli("graph", "examples/candidate-review.lwir.yaml", "--run", "r1",
                     "--data-dir", str(tmp_path))
    assert result.returncode == 0 and result.stderr == ""
    assert "worker<br/><small>ai.generate · maxVisits 5 · done ×3</small>" in result.stdout
    assert "class s0,s1,s2,s3 done" in result.stdout
    other = run_cli("graph", "examples/refine-loop.lwir.yaml", "--run", "r1",
                    "--data-dir", str(tmp_path))
    assert other.returncode == 0 and "statuses are matched by step path" in other.stderr
    unknown = run_cli("graph", "examples/refine-loop.lwir.yaml", "--run", "nope",
                      "--data-dir", str(tmp_path))
    assert unknown.returncode == 2 and "nope" in unknown.stderr


LOOP = """apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: g}
permissions: {tools: [t]}
steps:
  - {id: a, uses: tool.call, with: {tool: t}}
  - {id: b, uses: tool.call, needs: [a], maxVisits: 3, with: {tool: t}}
  - id: d
    uses: decision
    needs: [b]
    maxVisits: 3
    with: {cases: [{when: "{{ steps.b.lastOutput }}", to: end}], default: b}
  - {id: c, uses: tool.call, needs: [a], with: {tool: t}}
"""


def _event(seq: int, type: str, path: str | None, **payload: Any) -> Event:
    return Event(seq, "r", type, payload, path, 0.0)


def _graph(events: list[Event]) -> dict[str, tuple[str, int]]:
    document = load_text(LOOP, "g.lwir.yaml")
    graph = with_run(build(Context(document, "Workflow")), events)
    return {info.id: (graph.states[info.pointer].status, graph.states[info.pointer].visits)
            for info in graph.steps if info.pointer in graph.states}


def test_statuses_from_events() -> None:
    events = [_event(1, "RunStarted", None),
              _event(2, "StepAttemptStarted", "a"), _event(3, "StepCompleted", "a"),
              _event(4, "StepAttemptStarted", "b.visit[0]"),
              _event(5, "StepCompleted", "b.visit[0]"),
              _event(6, "StepAttemptStarted", "b.visit[1]"),
              _event(7, "StepCompleted", "b.visit[1]"),
              _event(8, "StepAttemptStarted", "c"),
              _event(9, "StepAttemptFailed", "c", transient=True),
              _event(10, "StepAttemptStarted", "c")]
    assert _graph(events) == {"a": ("done", 1), "b": ("done", 2), "c": ("running", 0)}
    failed = [*events, _event(11, "StepAttemptFailed", "c", final=True),
              _event(12, "RunFailed", None)]
    assert _graph(failed) == {"a": ("done", 1), "b": ("done", 2), "c": ("failed", 0),
                              "d": ("skipped", 0)}


def test_loops_and_ends_are_drawn() -> None:
    text = mermaid(build(Context(load_text(LOOP, "g.lwir.yaml"), "Workflow")))
    assert 's2 -.->|"default; loop, maxVisits 3"| s1' in text
    assert 's2 -->|"steps.b.lastOutput"| end_' in text and 'end_(["end"])' in text


def test_refusals(tmp_path: Path) -> None:
    bad = tmp_path / "bad.lwir.yaml"
    bad.write_text(LOOP.replace("needs: [a], maxVisits: 3", "needs: [zz], maxVisits: 3"))
    invalid = run_cli("graph", str(bad))
    assert invalid.returncode == 1 and "step.missing_dependency" in invalid.stderr
    assert "nothing to draw" in invalid.stderr and invalid.stdout == ""
    definition = tmp_path / "x.definition.yaml"
    definition.write_text("apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\n"
                          "id: x\nplanner: {model: m}\n")
    refused = run_cli("graph", str(definition))
    assert refused.returncode == 2 and "draws an LWIR workflow" in refused.stderr


def test_a_pipeline_is_drawn_and_an_unknown_run_of_it_refused(tmp_path: Path) -> None:
    pipeline = ROOT / "examples" / "pipeline" / "numbers.pipeline.yaml"
    drawn = run_cli("graph", str(pipeline))
    assert drawn.returncode == 0, drawn.stderr
    assert drawn.stdout.splitlines()[:4] == [
        "flowchart TD",
        '  p["numbers<br/><small>pipeline · orchestrator orchestrator · 4 sub-runs at '
        'once</small>"]',
        '  w0["double<br/><small>Doubles a number.</small>"]', "  p --> w0"]
    (tmp_path / "d").mkdir()
    unknown = run_cli("graph", str(pipeline), "--run", "nope", "--data-dir",
                      str(tmp_path / "d"))
    assert unknown.returncode == 2 and unknown.stdout == ""
