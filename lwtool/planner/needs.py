"""Needs a planner left out: add the `needs` entries a draft's references imply.

Before a planner's draft is validated, every `{{ steps.X... }}` that reads a step X of
the same step list gets X added to the reading step's `needs` (parallel bodies
included). Left alone, so that they stay validation errors for the planner to repair:
a reference to a step that does not exist, a reference from a parallel body to a step
outside it, and a reference whose needs entry would close a cycle. A draft that
already validates is returned unchanged. Fixed plans are never passed through here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from lwtool.source.loader import Document
from lwtool.source.source_map import SourceMap
from lwtool.validate.context import Context
from lwtool.validate.flow import flow_edges
from lwtool.validate.graph import reachable


@dataclass(frozen=True)
class AddedNeed:
    step_pointer: str
    step_id: str
    need: str


def infer_needs(lwir: dict[str, Any]) -> tuple[dict[str, Any], list[AddedNeed]]:
    """A copy of `lwir` with the implied needs added, and the list of what was added."""
    draft = copy.deepcopy(lwir)
    ctx = Context(Document("<draft>", "", draft, SourceMap(lambda _: (1, 1)), "json"), "Workflow")
    added: list[AddedNeed] = []
    for _, owner, ref in ctx.step_references():
        target = ref.step
        if target is None or target == owner.id or target in owner.needs:
            continue
        if target not in ctx.in_scope(owner.scope):
            continue  # unknown, or outside a parallel body: left for the planner
        edges = flow_edges(ctx, owner.scope)
        if target in reachable(owner.id, edges):
            continue  # the entry would close a cycle
        needs = owner.step.setdefault("needs", [])
        if not isinstance(needs, list):
            continue
        needs.append(target)
        edges[target].append(owner.id)  # later checks see the new edge
        added.append(AddedNeed(owner.pointer, owner.id, target))
    return draft, added
