"""A pipeline as a graph (`lwtool graph PIPELINE`): the pipeline, its orchestrator and
its workflows; with a run (`--run`), each sub-run under the workflow it ran, coloured
by its status as a workflow's steps are (lwtool.graph's classes)."""

from __future__ import annotations

from lwtool.graph import DOT_COLORS, MERMAID_CLASSES, dot_quote, mermaid_label
from lwtool.orchestrate.pipeline import Pipeline

# a run's status -> the graph's status class
_CLASS = {"completed": "done", "failed": "failed", "running": "running",
          "interrupted": "running", "waiting": "waiting"}


def _caption(pipeline: Pipeline) -> str:
    model = pipeline.model if isinstance(pipeline.model, str) else "scripted"
    return (f"pipeline · orchestrator {model} · {pipeline.max_concurrent_sub_runs} "
            "sub-runs at once")


def mermaid(pipeline: Pipeline, sub_runs: list[dict[str, str]] | None = None) -> str:
    """`sub_runs`: a run's, as lwtool.orchestrate.subruns.sub_run_states gives them."""
    lines = ["flowchart TD",
             f'  p["{mermaid_label(pipeline.id, _caption(pipeline))}"]']
    ids = {w.id: f"w{n}" for n, w in enumerate(pipeline.workflows)}
    for workflow in pipeline.workflows:
        about = str(workflow.definition.get("description") or "workflow")
        lines.append(f'  {ids[workflow.id]}["{mermaid_label(workflow.id, about)}"]')
        lines.append(f"  p --> {ids[workflow.id]}")
    classes: dict[str, list[str]] = {}
    for n, run in enumerate(sub_runs or []):
        node = f"r{n}"
        lines.append(f'  {node}(["{mermaid_label(run["runId"], run["status"])}"])')
        lines.append(f"  {ids.get(run['workflow'], 'p')} -.-> {node}")
        if run["status"] in _CLASS:
            classes.setdefault(_CLASS[run["status"]], []).append(node)
    for status, members in classes.items():
        lines.append(f"  classDef {status} {MERMAID_CLASSES[status]}")
        lines.append(f"  class {','.join(members)} {status}")
    return "\n".join(lines) + "\n"


def dot(pipeline: Pipeline, sub_runs: list[dict[str, str]] | None = None) -> str:
    lines = ["digraph pipeline {", "  rankdir=TB;", '  node [fontname="Helvetica", '
             'shape=box, style="rounded,filled", fillcolor=white];',
             f"  p [shape=box3d, label={dot_quote(pipeline.id + chr(10) + _caption(pipeline))}];"]
    ids = {w.id: f"w{n}" for n, w in enumerate(pipeline.workflows)}
    for workflow in pipeline.workflows:
        about = str(workflow.definition.get("description") or "workflow")
        lines.append(f"  {ids[workflow.id]} [label={dot_quote(workflow.id + chr(10) + about)}];")
        lines.append(f"  p -> {ids[workflow.id]};")
    for n, run in enumerate(sub_runs or []):
        color = DOT_COLORS.get(_CLASS.get(run["status"], ""), "white")
        lines.append(f"  r{n} [shape=oval, fillcolor={dot_quote(color)}, "
                     f"label={dot_quote(run['runId'] + chr(10) + run['status'])}];")
        lines.append(f"  {ids.get(run['workflow'], 'p')} -> r{n} [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"
