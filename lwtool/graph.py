"""A workflow as a graph, for people: Mermaid (renders on GitHub and in Markdown) or
Graphviz DOT. `needs` edges, decision edges labelled with their conditions, back-edges
drawn dashed as loops with their maxVisits, parallel groups as clusters with their
bounds; with a run's events, each step's status and visit count.

Built from the validator's own structures (Context, decision_targets, flow_edges), so
the graph shows exactly what the validator and the runtime read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lwtool.validate.context import Context, StepInfo
from lwtool.validate.flow import decision_targets, flow_edges

STATUSES = ("done", "failed", "running", "skipped", "waiting")


@dataclass
class Edge:
    source: str  # a step pointer
    target: str  # a step pointer, or "<scope>#end"
    kind: str  # needs | case | default | back
    label: str = ""


@dataclass
class StepState:
    status: str = ""  # one of STATUSES, or "" (not reached)
    visits: int = 0


@dataclass
class Graph:
    steps: list[StepInfo]
    edges: list[Edge]
    states: dict[str, StepState] = field(default_factory=dict)  # pointer -> state

    def in_scope(self, scope: str) -> list[StepInfo]:
        return [info for info in self.steps if info.scope == scope]


def build(ctx: Context) -> Graph:
    """The graph of a valid workflow."""
    edges: list[Edge] = []
    reach: dict[str, dict[str, set[str]]] = {}  # scope -> step id -> ids it reaches
    for info in ctx.steps:
        siblings = ctx.in_scope(info.scope)
        for need in info.needs:
            if need in siblings:
                edges.append(Edge(siblings[need].pointer, info.pointer, "needs"))
        for target, pointer in decision_targets(info):
            label = "default"
            if pointer.endswith("/to"):  # .../with/cases/<i>/to
                case = info.with_["cases"][int(pointer.rsplit("/", 2)[-2])]
                label = _condition(str(case.get("when", "")))
            if target == "end":
                edges.append(Edge(info.pointer, f"{info.scope}#end", "default"
                                  if label == "default" else "case", label))
                continue
            goal = siblings.get(target)
            if goal is None:
                continue
            if info.scope not in reach:
                reach[info.scope] = _reachable(flow_edges(ctx, info.scope))
            back = info.id in reach[info.scope].get(target, set())  # leads back here: a loop
            kind = "back" if back else ("default" if label == "default" else "case")
            if back:
                label = f"{label}; loop, maxVisits {goal.max_visits}"
            edges.append(Edge(info.pointer, goal.pointer, kind, label))
    return Graph(list(ctx.steps), edges)


def _reachable(edges: dict[str, list[str]]) -> dict[str, set[str]]:
    """step id -> every id reachable from it."""
    out: dict[str, set[str]] = {}
    for start in edges:
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            step = todo.pop()
            if step not in seen:
                seen.add(step)
                todo.extend(edges.get(step, []))
        out[start] = seen
    return out


def _condition(when: str) -> str:
    text = when.strip()
    if text.startswith("{{") and text.endswith("}}"):
        text = text[2:-2].strip()
    return text if len(text) <= 60 else text[:57] + "..."


def with_run(graph: Graph, events: list[Any]) -> Graph:
    """The graph with each step's status and visit count from a run's events (StepInfo
    pointers matched to step paths: `group[key].step.visit[N]`)."""
    find = pointer_finder(graph)
    counts: dict[str, dict[str, int]] = {}
    terminal = None
    for event in events:
        if event.type in ("RunCompleted", "RunFailed"):
            terminal = event.type
        elif event.type == "RunRetried":  # `lwtool retry`: the failures before it are past
            terminal = None
            for tally in counts.values():
                tally.pop("failed", None)
        path = event.step_path
        if path is None or event.type not in ("StepAttemptStarted", "StepCompleted",
                                              "StepSkipped", "StepAttemptFailed",
                                              "HumanInputRequested"):
            continue
        final_failure = event.type == "StepAttemptFailed" and event.payload.get(
            "final", not event.payload.get("transient", False))
        pointer = find(path)
        if pointer is not None:
            tally = counts.setdefault(pointer, {})
            tally[event.type] = tally.get(event.type, 0) + 1
            if final_failure:
                tally["failed"] = 1
    for pointer, tally in counts.items():
        started = tally.get("StepAttemptStarted", 0)
        completed = tally.get("StepCompleted", 0)
        if tally.get("failed"):
            status = "failed"
        elif completed:
            status = "done"
        elif tally.get("StepSkipped"):
            status = "skipped"
        elif started:
            status = "failed" if terminal else "running"
        elif tally.get("HumanInputRequested"):
            status = "waiting"
        else:
            status = ""
        graph.states[pointer] = StepState(status, completed)
    if terminal is not None:
        for info in graph.steps:
            graph.states.setdefault(info.pointer, StepState("skipped", 0))
    return graph


def caption(graph: Graph, info: StepInfo) -> str:
    """A node's second line: type (and the workflow an invoke runs), maxVisits, and its
    status in the run (an invoke's is its child run's)."""
    parts = [info.uses + _invoked(info)] + (
        [f"maxVisits {info.max_visits}"] if info.max_visits > 1 else [])
    state = graph.states.get(info.pointer)
    if state and state.status:
        parts.append(state.status + (f" ×{state.visits}" if state.visits > 1 else ""))
    return " · ".join(parts)


def _invoked(info: StepInfo) -> str:
    """` → score.lwir.yaml` (the workflow a workflow.invoke runs), else ""."""
    ref = info.with_.get("workflow") if info.uses == "workflow.invoke" else None
    if not isinstance(ref, str) or not ref:
        return ""
    return f" → {ref[:19] + '…' if ref.startswith('sha256:') else ref.rsplit('/', 1)[-1]}"


_KEYS_AND_VISITS = re.compile(r"\.visit\[\d+\]|\[[^\]]*\]")


def _lineage(info: StepInfo) -> list[StepInfo]:
    """The step's enclosing parallel groups, outermost first, then the step."""
    chain = []
    node: StepInfo | None = info
    while node is not None:
        chain.append(node)
        node = node.parent
    return chain[::-1]


def pointer_finder(graph: Graph) -> Callable[[str], str | None]:
    """step path -> the pointer of its step (None for a path of no step here). By its
    ids without branch keys and visits (`g.visit[1][k].s.visit[0]` -> `g.s`), at once;
    a path whose item keys hold brackets falls back to matching each step's pattern."""
    index = {".".join(node.id for node in _lineage(info)): info.pointer
             for info in graph.steps}
    patterns: list[tuple[str, re.Pattern[str]]] = []
    found: dict[str, str | None] = {}

    def find(path: str) -> str | None:
        if path not in found:
            pointer = index.get(_KEYS_AND_VISITS.sub("", path))
            if pointer is None:
                if not patterns:
                    patterns.extend((info.pointer, _path_pattern(info))
                                    for info in graph.steps)
                pointer = next((p for p, pattern in patterns if pattern.fullmatch(path)), None)
            found[path] = pointer
        return found[path]

    return find


def _path_pattern(info: StepInfo) -> re.Pattern[str]:
    *groups, step = _lineage(info)
    parts = [re.escape(group.id) + r"\[.*\]\." for group in groups]
    return re.compile("".join(parts) + re.escape(step.id) + r"(\.visit\[\d+\])?")


# -- Mermaid ---------------------------------------------------------------------------

MERMAID_CLASSES = {"done": "fill:#d3f9d8,stroke:#2b8a3e",
                    "failed": "fill:#ffe3e3,stroke:#c92a2a",
                    "running": "fill:#fff3bf,stroke:#e67700",
                    "skipped": "fill:#f1f3f5,stroke:#adb5bd,color:#868e96",
                    "waiting": "fill:#e7f5ff,stroke:#1971c2"}


def mermaid_text(value: str) -> str:
    """Text inside a Mermaid node label (its quotes and angle brackets as entities)."""
    return value.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def mermaid_label(title: str, detail: str) -> str:
    """A node's label: its title, and a detail line in small print."""
    return f"{mermaid_text(title)}<br/><small>{mermaid_text(detail)}</small>"


def dot_escape(value: str) -> str:
    """Text inside a DOT string literal."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def dot_quote(value: str) -> str:
    """A DOT string literal."""
    return f'"{dot_escape(value)}"'


def mermaid(graph: Graph) -> str:
    ids = {info.pointer: f"s{index}" for index, info in enumerate(graph.steps)}
    lines = ["flowchart TD"]

    def label(info: StepInfo) -> str:
        return mermaid_label(info.id, caption(graph, info))

    def scope(pointer: str, indent: str) -> None:
        for info in graph.in_scope(pointer):
            node = ids[info.pointer]
            if info.uses == "parallel":
                bounds = mermaid_text(group_bounds(info))
                lines.append(f'{indent}subgraph {node}_body["{mermaid_text(info.id)} · {bounds}"]')
                lines.append(f"{indent}  direction TB")
                scope(info.pointer, indent + "  ")
                lines.append(f"{indent}end")
                lines.append(f'{indent}{node}[["{label(info)}"]]')
                lines.append(f"{indent}{node} -. each item .-> {node}_body")
            elif info.uses == "decision":
                lines.append(f'{indent}{node}{{"{label(info)}"}}')
            else:
                lines.append(f'{indent}{node}["{label(info)}"]')
        if any(edge.target == f"{pointer}#end" for edge in graph.edges):
            lines.append(f'{indent}{_end_id(pointer, ids)}(["end"])')

    scope("", "  ")
    for edge in graph.edges:
        source = ids[edge.source]
        target = ids.get(edge.target) or _end_id(edge.target.split("#")[0], ids)
        arrow = {"needs": "-->", "case": "-->", "default": "-->", "back": "-.->"}[edge.kind]
        lines.append(f'  {source} {arrow}|"{mermaid_text(edge.label)}"| {target}' if edge.label
                     else f"  {source} {arrow} {target}")
    for status in STATUSES:
        members = [ids[info.pointer] for info in graph.steps
                   if getattr(graph.states.get(info.pointer), "status", "") == status]
        if members:
            lines.append(f"  classDef {status} {MERMAID_CLASSES[status]}")
            lines.append(f"  class {','.join(members)} {status}")
    return "\n".join(lines) + "\n"


def _end_id(scope_pointer: str, ids: dict[str, str]) -> str:
    return f"{ids[scope_pointer]}_end" if scope_pointer else "end_"


def group_bounds(info: StepInfo) -> str:
    with_ = info.with_
    return (f"≤{with_.get('maxBranches')} branches, {with_.get('maxConcurrency')} at once, "
            f"{with_.get('failureMode', 'fail_fast')}")


# -- DOT -------------------------------------------------------------------------------

DOT_COLORS = {"done": "#d3f9d8", "failed": "#ffe3e3", "running": "#fff3bf",
               "skipped": "#f1f3f5", "waiting": "#e7f5ff"}


def dot(graph: Graph) -> str:
    ids = {info.pointer: f"s{index}" for index, info in enumerate(graph.steps)}
    lines = ["digraph workflow {", "  rankdir=TB;", '  node [fontname="Helvetica", '
             'shape=box, style="rounded,filled", fillcolor=white];',
             '  edge [fontname="Helvetica", fontsize=10];']

    def node(info: StepInfo, indent: str) -> None:
        state = graph.states.get(info.pointer)
        attrs = {"shape": dot_quote("diamond" if info.uses == "decision" else
                                "box3d" if info.uses == "parallel" else "box")}
        if state and state.status:
            attrs["fillcolor"] = dot_quote(DOT_COLORS[state.status])
        attrs["label"] = f'"{dot_escape(info.id)}\\n{dot_escape(caption(graph, info))}"'
        rendered = ", ".join(f"{k}={v}" for k, v in attrs.items())
        lines.append(f"{indent}{ids[info.pointer]} [{rendered}];")

    def scope(pointer: str, indent: str) -> None:
        for info in graph.in_scope(pointer):
            node(info, indent)
            if info.uses == "parallel":
                lines.append(f"{indent}subgraph cluster_{ids[info.pointer]} {{")
                lines.append(f"{indent}  label={dot_quote(info.id + ' · ' + group_bounds(info))};")
                lines.append(f'{indent}  style="rounded,dashed";')
                scope(info.pointer, indent + "  ")
                lines.append(f"{indent}}}")
                body = graph.in_scope(info.pointer)
                if body:
                    lines.append(f"{indent}{ids[info.pointer]} -> {ids[body[0].pointer]} "
                                 f'[style=dotted, label="each item", '
                                 f"lhead=cluster_{ids[info.pointer]}];")
        if any(edge.target == f"{pointer}#end" for edge in graph.edges):
            lines.append(f'{indent}{_end_id(pointer, ids)} [label="end", shape=oval];')

    scope("", "  ")
    for edge in graph.edges:
        target = ids.get(edge.target) or _end_id(edge.target.split("#")[0], ids)
        attrs = [f"label={dot_quote(edge.label)}"] if edge.label else []
        if edge.kind == "back":
            attrs += ["style=dashed", "constraint=false"]
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"  {ids[edge.source]} -> {target}{suffix};")
    lines.append("}")
    return "\n".join(lines) + "\n"
