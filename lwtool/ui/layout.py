"""The workflow graph as SVG for the web inspector, laid out here (no browser library,
no Graphviz binary): each scope is layered top-down by its forward edges (needs,
decision cases), nodes ordered in a layer by where their predecessors stand; a
parallel group is a box holding its body's layout; loop (back) edges are dashed arcs
on the right. Linear in the steps and edges, so a 1,000-step workflow lays out at once.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from html import escape

from lwtool.graph import Edge, Graph, caption, group_bounds
from lwtool.validate.context import StepInfo

NODE_W, NODE_H = 236, 46
GAP_X, GAP_Y = 26, 44
PAD, HEADER = 14, 30
END_W = 70


@dataclass
class Box:
    key: str  # a step pointer, or "<scope>#end"
    x: float = 0.0
    y: float = 0.0
    w: float = NODE_W
    h: float = NODE_H
    info: StepInfo | None = None
    body: Block | None = None  # a parallel group's steps


@dataclass
class Block:
    """A scope's laid-out boxes, positioned relative to the block's top-left."""

    boxes: list[Box] = field(default_factory=list)
    w: float = 0.0
    h: float = 0.0


def svg(graph: Graph, link: dict[str, str] | None = None) -> str:
    """The graph as an SVG document; `link` maps step pointers to the URL a node opens."""
    by_scope: dict[str, list[StepInfo]] = {}
    for info in graph.steps:
        by_scope.setdefault(info.scope, []).append(info)
    scope_of = {info.pointer: info.scope for info in graph.steps}
    edges: dict[str, list[Edge]] = {}
    for edge in graph.edges:
        edges.setdefault(scope_of.get(edge.source, ""), []).append(edge)
    top = _block("", by_scope, edges, graph)
    placed: dict[str, Box] = {}
    _place(top, 0.0, 0.0, placed)
    back_lane = top.w + 18
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" '
             f'viewBox="-4 -4 {back_lane + 60:.0f} {top.h + 8:.0f}" '
             f'width="{back_lane + 60:.0f}" height="{top.h + 8:.0f}" role="img" '
             f'aria-label="workflow graph">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" '
             'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
             '<path d="M0,0 L10,5 L0,10 z"/></marker></defs>']
    for box in placed.values():
        parts.append(_node(box, graph, link or {}))
    loops = 0
    for edge in graph.edges:
        source, target = placed.get(edge.source), placed.get(edge.target)
        if source is None or target is None:
            continue
        if edge.kind == "back":
            loops += 1
            parts.append(_back_edge(source, target, edge, loops))
        else:
            parts.append(_edge(source, target, edge))
    parts.append("</svg>")
    return "".join(parts)


def _block(scope: str, by_scope: dict[str, list[StepInfo]], edges: dict[str, list[Edge]],
           graph: Graph) -> Block:
    infos = by_scope.get(scope, [])
    boxes = {info.pointer: Box(info.pointer, info=info) for info in infos}
    for box in boxes.values():
        assert box.info is not None
        if box.info.uses == "parallel":
            box.body = _block(box.info.pointer, by_scope, edges, graph)
            title = len(_group_title(graph, box.info)) * 7.2 + 24
            box.w = max(NODE_W, box.body.w + 2 * PAD, title)
            box.h = HEADER + box.body.h + PAD
    forward = [e for e in edges.get(scope, []) if e.kind != "back"]
    end_key = f"{scope}#end"
    if any(e.target == end_key for e in forward):
        boxes[end_key] = Box(end_key, w=END_W, h=30)
    order = {key: index for index, key in enumerate(boxes)}
    preds: dict[str, list[str]] = {key: [] for key in boxes}
    for edge in forward:
        if edge.source in boxes and edge.target in boxes:
            preds[edge.target].append(edge.source)
    layer = _layers(list(boxes), preds)
    rows: dict[int, list[str]] = {}
    for key in boxes:
        rows.setdefault(layer[key], []).append(key)
    block = Block()
    center: dict[str, float] = {}
    y = 0.0
    for depth in sorted(rows):
        row = rows[depth]
        row.sort(key=lambda k: (_mean([center[p] for p in preds[k] if p in center],
                                      order[k] * 1000.0), order[k]))
        width = sum(boxes[k].w for k in row) + GAP_X * (len(row) - 1)
        x = -width / 2
        height = max(boxes[k].h for k in row)
        for key in row:
            box = boxes[key]
            box.x, box.y = x, y
            center[key] = x + box.w / 2
            x += box.w + GAP_X
        y += height + GAP_Y
    if boxes:
        left = min(b.x for b in boxes.values())
        right = max(b.x + b.w for b in boxes.values())
        for box in boxes.values():
            box.x -= left
        block.w, block.h = right - left, y - GAP_Y
    block.boxes = list(boxes.values())
    return block


def _layers(keys: list[str], preds: dict[str, list[str]]) -> dict[str, int]:
    """Longest-path layering in declaration order (validated LWIR is acyclic over
    forward edges; anything left over by a cycle goes below the rest)."""
    layer: dict[str, int] = {}
    remaining = {key: len(set(preds[key])) for key in keys}
    succs: dict[str, list[str]] = {key: [] for key in keys}
    for key in keys:
        for pred in set(preds[key]):
            succs[pred].append(key)
    ready = deque(key for key in keys if remaining[key] == 0)
    while ready:
        key = ready.popleft()
        layer[key] = max((layer[p] + 1 for p in preds[key] if p in layer), default=0)
        for succ in succs[key]:
            remaining[succ] -= 1
            if remaining[succ] == 0:
                ready.append(succ)
    deepest = max(layer.values(), default=-1)
    for key in keys:
        layer.setdefault(key, deepest + 1)
    return layer


def _mean(values: list[float], default: float) -> float:
    return sum(values) / len(values) if values else default


def _place(block: Block, dx: float, dy: float, placed: dict[str, Box]) -> None:
    for box in block.boxes:
        box.x += dx
        box.y += dy
        placed[box.key] = box
        if box.body is not None:
            inner = box.x + (box.w - box.body.w) / 2
            _place(box.body, inner, box.y + HEADER, placed)


def _node(box: Box, graph: Graph, link: dict[str, str]) -> str:
    if box.info is None:  # a scope's end
        return (f'<g class="end"><rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w}" '
                f'height="{box.h}" rx="15"/><text x="{box.x + box.w / 2:.1f}" '
                f'y="{box.y + 19:.1f}">end</text></g>')
    info = box.info
    state = graph.states.get(info.pointer)
    status = state.status if state and state.status else "pending"
    title = escape(f"{info.id} ({info.uses}) · {status}" + (
        f" · {state.visits} visits" if state and state.visits > 1 else ""))
    cx = box.x + box.w / 2
    shape = "group" if info.uses == "parallel" else info.uses.replace(".", "-")
    inner: list[str] = [f"<title>{title}</title>"]
    if info.uses == "parallel":
        inner.append(f'<rect class="frame" x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" '
                     f'height="{box.h:.1f}" rx="10"/>')
        inner.append(f'<text class="id title" x="{box.x + 10:.1f}" y="{box.y + 19:.1f}">'
                     f'{escape(_group_title(graph, info))}</text>')
    else:
        inner.append(f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" '
                     f'height="{box.h:.1f}" rx="{3 if info.uses == "decision" else 8}"/>')
        inner.append(f'<text class="id" x="{cx:.1f}" y="{box.y + 19:.1f}">'
                     f'{escape(_fit(info.id, 26))}</text>')
        inner.append(f'<text class="caption" x="{cx:.1f}" y="{box.y + 36:.1f}">'
                     f'{escape(_fit(caption(graph, info), 40))}</text>')
    body = "".join(inner)
    href = link.get(info.pointer)
    if href:
        body = f'<a href="{escape(href)}">{body}</a>'
    return (f'<g class="node {shape} {status}" data-pointer="{escape(info.pointer)}" '
            f'data-status="{status}">{body}</g>')


def _group_title(graph: Graph, info: StepInfo) -> str:
    state = graph.states.get(info.pointer)
    status = f" · {state.status}" if state and state.status else ""
    return f"{info.id} · parallel, {group_bounds(info)}{status}"


def _fit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _edge(source: Box, target: Box, edge: Edge) -> str:
    x1, y1 = source.x + source.w / 2, source.y + source.h
    x2, y2 = target.x + target.w / 2, target.y
    bend = max(18.0, (y2 - y1) / 2)
    path = (f"M{x1:.1f},{y1:.1f} C{x1:.1f},{y1 + bend:.1f} {x2:.1f},{y2 - bend:.1f} "
            f"{x2:.1f},{y2:.1f}")
    label = ""
    if edge.label:
        label = (f'<text class="label" x="{(x1 + x2) / 2 + 4:.1f}" y="{(y1 + y2) / 2:.1f}">'
                 f'{escape(_fit(edge.label, 40))}</text>')
    return f'<g class="edge {edge.kind}"><path d="{path}" marker-end="url(#arrow)"/>{label}</g>'


def _back_edge(source: Box, target: Box, edge: Edge, n: int) -> str:
    x1, y1 = source.x + source.w, source.y + source.h / 2
    x2, y2 = target.x + target.w, target.y + target.h / 2
    out = max(x1, x2) + 24 + 10 * (n % 4)
    path = f"M{x1:.1f},{y1:.1f} C{out:.1f},{y1:.1f} {out:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
    return (f'<g class="edge back"><path d="{path}" marker-end="url(#arrow)"/>'
            f'<text class="label" x="{out + 4:.1f}" y="{(y1 + y2) / 2:.1f}">'
            f'{escape(_fit(edge.label, 40))}</text></g>')
