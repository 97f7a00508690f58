"""`lwtool validate --portable` (and the language server's `lwtool.portable` setting):
each use of an lwtool extension, where a file leaves the Little Workflow spec's portable
subset, as a `portable.extension` warning at its place, saying what the spec offers
instead. The extensions, as docs/rules.md and the README label them:

- a `human.input`, `workflow.invoke`, `map` or `ai.agent` step; a step's `timeoutMs`, `retry` and
  `secrets`; an escalated repair (`onFailure.repair.mode: escalate`); a non-empty
  `permissions.secrets` or `permissions.network` (the spec's alpha reserves both and
  rejects a non-empty one);
- code.run sandbox limits beyond network, env and fs (`timeoutMs`, `memoryMb`, ...);
- expression functions beyond the spec's `sha256` and `coalesce`;
- a definition's `runtime` (budget, durability) and `planner.maxCodeSandbox`;
- a pipeline's `orchestrator.maxSubRuns`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lwtool.expr import ast
from lwtool.source import pointer as pointers
from lwtool.source.finding import Finding, Severity
from lwtool.validate.context import Context

CODE = "portable.extension"
SPEC_FUNCTIONS = frozenset({"sha256", "coalesce"})
SPEC_SANDBOX = frozenset({"network", "env", "fs"})
_STEP_FIELDS = {
    "timeoutMs": "the spec bounds the whole run (runWorkflow's timeout), not a step",
    "retry": "the spec's runtime retries transient failures by its own policy",
    "secrets": "the spec's alpha has no secret broker: a portable step reads no secret",
}
_STEP_TYPES = {
    "human.input": "the spec has no step that waits for a person (end the workflow and "
                   "start another with the answer, or call an approval tool)",
    "workflow.invoke": "the spec defers child workflows (inline the child's steps, or "
                       "compose workflows in a pipeline)",
    "map": "the spec defers sharded fan-out (a parallel step takes up to 100 items)",
    "ai.agent": "the spec defers agent-loop steps (call tools from a code.run step, or "
                "let a pipeline's orchestrator use them)",
}
_PERMISSIONS = {
    "secrets": "the spec's alpha has no secret broker and rejects a non-empty list",
    "network": "the spec's alpha has no egress allowlist and rejects a non-empty list",
}
_DEFINITION_FIELDS = {
    ("runtime",): "the spec defers budgets and durability modes; there is none",
    ("planner", "maxCodeSandbox"): "the spec's planner may draft any code.run sandbox; "
                                   "review the plan",
}


def portable_findings(document: Any, kind: str | None) -> list[Finding]:
    """The `portable.extension` warnings of a loaded document of `kind`."""
    if kind is None or not isinstance(document.value, dict):
        return []
    ctx = Context(document, kind)
    ctx.code = CODE
    if kind == "Workflow":
        return list(_workflow(ctx))
    if kind == "WorkflowDefinition":
        return list(_fields(ctx, _DEFINITION_FIELDS))
    if kind == "Pipeline":
        return list(_fields(ctx, {("orchestrator", "maxSubRuns"): "the spec's orchestrator "
                                  "has no bound on sub-runs besides maxConcurrentSubRuns"}))
    return []


def _warning(ctx: Context, pointer: str, what: str, instead: str, key: bool = True,
             span: Any = None) -> Finding:
    return ctx.finding(pointer, f"{what} is an lwtool extension, outside the spec's "
                       f"portable LWIR: {instead}", key=key and span is None, span=span,
                       severity=Severity.WARNING)


def _workflow(ctx: Context) -> Iterator[Finding]:
    permissions = ctx.value.get("permissions")
    for field, instead in _PERMISSIONS.items():
        if isinstance(permissions, dict) and permissions.get(field):
            yield _warning(ctx, f"/permissions/{field}", f"`permissions.{field}`", instead)
    for info in ctx.steps:
        if info.uses in _STEP_TYPES:
            yield _warning(ctx, f"{info.pointer}/uses", f"the {info.uses} step",
                           _STEP_TYPES[info.uses], key=False)
        if info.repair.get("mode") == "escalate":
            yield _warning(ctx, f"{info.pointer}/onFailure/repair/mode", "an escalated "
                           "repair", "the spec's alpha reserves and rejects it (repair "
                           "with mode self, or run the step on the stronger model)",
                           key=False)
        for field, instead in _STEP_FIELDS.items():
            if field in info.step:
                yield _warning(ctx, f"{info.pointer}/{field}", f"a step's `{field}`", instead)
        sandbox = info.with_.get("sandbox") if info.uses == "code.run" else None
        for field in sorted(set(sandbox or {}) - SPEC_SANDBOX):
            yield _warning(ctx, f"{info.pointer}/with/sandbox/{field}",
                           f"the sandbox limit `{field}`", "the spec's sandbox says "
                           "network, env and fs only (limits are the worker harness's)")
    for site, part, node in ctx.expression_nodes():
        if isinstance(node, ast.Call) and node.name not in SPEC_FUNCTIONS:
            span = ctx.expression_span(site.pointer, site.value, part.offset + node.start,
                                       part.offset + node.name_end)
            yield _warning(ctx, site.pointer, f"the expression function `{node.name}`",
                           "the spec has sha256 and coalesce (compute the rest in a "
                           "code.run step or a tool)", span=span)


def _fields(ctx: Context, fields: dict[tuple[str, ...], str]) -> Iterator[Finding]:
    for path, instead in fields.items():
        where = pointers.from_parts(path)
        try:
            used = pointers.resolve(ctx.value, where) is not None
        except (KeyError, IndexError, ValueError):
            used = False
        if used:
            yield _warning(ctx, where, f"`{'.'.join(path)}`", instead)
