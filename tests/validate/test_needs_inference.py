"""Needs inference for planner drafts: adds what it may, leaves the three cases."""

from __future__ import annotations

from typing import Any

from lwtool.planner.needs import infer_needs
from lwtool.source.loader import load_text
from lwtool.validate.run import validate_document
from tests.conftest import MINIMAL_HEADER, permitted


def _lwir(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return permitted({**MINIMAL_HEADER, "steps": steps})


def _codes(lwir: dict[str, Any]) -> list[str]:
    import json

    return [f.code for f in validate_document(load_text(json.dumps(lwir), "d.json"))]


def tool(step_id: str, **extra: Any) -> dict[str, Any]:
    return {"id": step_id, "uses": "tool.call", "with": {"tool": "t"}, **extra}


def test_adds_a_missing_need_and_the_draft_then_validates() -> None:
    draft = _lwir([tool("a"), tool("b", input={"x": "{{ steps.a.output.v }}"})])
    assert _codes(draft) == ["step.missing_dependency"]
    fixed, added = infer_needs(draft)
    assert [(a.step_id, a.need) for a in added] == [("b", "a")]
    assert fixed["steps"][1]["needs"] == ["a"]
    assert _codes(fixed) == []
    assert "needs" not in draft["steps"][1]  # the input is not modified


def test_valid_draft_is_unchanged() -> None:
    draft = _lwir([tool("a"), tool("b", needs=["a"], input="{{ steps.a.output }}")])
    fixed, added = infer_needs(draft)
    assert added == [] and fixed == draft


def test_inside_a_parallel_body() -> None:
    body = [tool("x"), tool("y", input="{{ steps.x.output }}")]
    draft = _lwir([{"id": "p", "uses": "parallel", "with": {
        "items": "{{ input.rows }}", "maxBranches": 5, "maxConcurrency": 2}, "steps": body}])
    fixed, added = infer_needs(draft)
    assert [(a.step_id, a.need) for a in added] == [("y", "x")]
    assert _codes(fixed) == []


def test_leaves_unknown_steps_outer_references_and_cycles() -> None:
    draft = _lwir([
        tool("a", input="{{ steps.ghost.output }}"),
        tool("job"),
        {"id": "p", "uses": "parallel", "needs": ["job"], "with": {
            "items": "{{ input.rows }}", "maxBranches": 5, "maxConcurrency": 2},
         "steps": [tool("w", input="{{ steps.job.output }}")]},
        tool("c", needs=["d"]),
        tool("d", input="{{ steps.c.output }}"),
        tool("e", needs=["f"], input="{{ steps.f.output }}"),
        tool("f", input="{{ steps.e.output }}"),
    ])
    fixed, added = infer_needs(draft)
    assert added == []  # d->c and f->e would each close a cycle
    codes = _codes(fixed)
    assert codes.count("step.missing_dependency") == 3  # ghost, d reads c, f reads e
    assert "parallel.reference_outside_body" in codes
    assert "lwir.invalid_cycle" not in codes
