"""Graph math for the rules: Tarjan's strongly connected components and reachability.
No messages here; rules/lwir/invalid_cycle.py words the findings."""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Generic, TypeVar

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


class Reachability(Generic[N]):
    """`reaches(a, b)`: can `a` reach `b` by one or more edges?

    Steps of one strongly connected cycle reach each other at once. Other queries run
    a breadth-first search from `a` that stops as soon as `b` is found, and remember
    how far it got, so repeated queries from one source cost one search in all. A
    total budget of visited nodes bounds the time on adversarial graphs; past it,
    queries answer False (the conservative answer for the rule that asks: the finding
    is reported rather than an exemption assumed).
    """

    def __init__(self, nodes: Iterable[N], edges: Mapping[N, Iterable[N]],
                 budget: int = 2_000_000) -> None:
        self._edges = edges
        self._cycle_of: dict[N, int] = {}
        for number, component in enumerate(strongly_connected(list(nodes), edges)):
            if is_cycle(component, edges):
                for member in component:
                    self._cycle_of[member] = number
        self._seen: dict[N, set[N]] = {}
        self._frontier: dict[N, list[N]] = {}
        self.budget = budget

    def reaches(self, a: N, b: N) -> bool:
        cycle = self._cycle_of.get(a)
        if cycle is not None and cycle == self._cycle_of.get(b):
            return True
        seen = self._seen.setdefault(a, set())
        if b in seen:
            return True
        frontier = self._frontier.setdefault(a, list(self._edges.get(a, ())))
        while frontier and self.budget > 0:
            node = frontier.pop()
            if node in seen:
                continue
            seen.add(node)
            self.budget -= 1
            frontier.extend(self._edges.get(node, ()))
            if node == b:
                return True
        return False
