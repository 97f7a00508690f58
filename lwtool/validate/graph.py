"""Graph math for the rules: Tarjan's strongly connected components and reachability.
No messages here; rules/lwir/invalid_cycle.py words the findings."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

N = TypeVar("N", bound=Hashable)


def strongly_connected(nodes: Iterable[N], edges: Mapping[N, Iterable[N]]) -> list[list[N]]:
    """Tarjan's SCCs (iterative, so a long chain cannot overflow the stack)."""
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on_stack: set[N] = set()
    stack: list[N] = []
    result: list[list[N]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[N, list[N]]] = [(root, list(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                nxt = pending.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, list(edges.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                result.append(component)
    return result


def is_cycle(component: list[N], edges: Mapping[N, Iterable[N]]) -> bool:
    return len(component) > 1 or component[0] in set(edges.get(component[0], ()))


def cycle_path(start: N, members: set[N], edges: Mapping[N, Iterable[N]]) -> list[N]:
    """One simple cycle through `start` inside an SCC, as start -> ... -> start."""
    previous: dict[N, N] = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in edges.get(node, ()):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if nxt in members and nxt not in seen:
                    seen.add(nxt)
                    previous[nxt] = node
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return [start]


def reachable(start: N, edges: Mapping[N, Iterable[N]]) -> set[N]:
    """Every node reachable from `start` by one or more edges."""
    seen: set[N] = set()
    todo = list(edges.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(edges.get(node, ()))
    return seen
