"""The execution-flow graph of one scope: needs edges plus decision transition edges."""

from __future__ import annotations

from lwtool.validate.context import Context, StepInfo


def decision_targets(info: StepInfo) -> list[tuple[str, str]]:
    """(target, pointer) for each `to` and the `default` of a decision step."""
    if info.uses != "decision":
        return []
    out = []
    cases = info.with_.get("cases")
    if isinstance(cases, list):
        for i, case in enumerate(cases):
            if isinstance(case, dict) and isinstance(case.get("to"), str):
                out.append((case["to"], f"{info.pointer}/with/cases/{i}/to"))
    default = info.with_.get("default")
    if isinstance(default, str):
        out.append((default, f"{info.pointer}/with/default"))
    return out


def flow_edges(ctx: Context, scope: str) -> dict[str, list[str]]:
    """step id -> the ids that may run after it (X in needs of S: X -> S; decision -> to)."""
    cached = ctx._cache.get(f"flow:{scope}")
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    steps = ctx.in_scope(scope)
    edges: dict[str, list[str]] = {sid: [] for sid in steps}
    for sid, info in steps.items():
        for need in info.needs:
            if need in steps:
                edges[need].append(sid)
        for target, _ in decision_targets(info):
            if target in steps:
                edges[sid].append(target)
    ctx._cache[f"flow:{scope}"] = edges
    return edges
