"""Expression AST. `start`/`end` are character offsets inside the expression text.

Nodes are read-only by convention, hashable and compared by value; not frozen
dataclasses, which cost three times as much to make (the validator makes several per
expression of a document)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROOTS = ("input", "steps", "item", "workflow", "step")
STEP_ACCESSORS = ("output", "lastOutput", "allVisits")


@dataclass(unsafe_hash=True, slots=True)
class Node:
    start: int = field(default=0, compare=False, kw_only=True)
    end: int = field(default=0, compare=False, kw_only=True)


@dataclass(unsafe_hash=True, slots=True)
class Root(Node):
    name: str


@dataclass(unsafe_hash=True, slots=True)
class Literal(Node):
    value: Any


@dataclass(unsafe_hash=True, slots=True)
class Array(Node):
    items: tuple[Node, ...]


@dataclass(unsafe_hash=True, slots=True)
class Member(Node):
    target: Node
    name: str


@dataclass(unsafe_hash=True, slots=True)
class Index(Node):
    target: Node
    index: Node


@dataclass(unsafe_hash=True, slots=True)
class Call(Node):
    name: str
    args: tuple[Node, ...]
    name_end: int = field(default=0, compare=False, kw_only=True)


@dataclass(unsafe_hash=True, slots=True)
class Compare(Node):
    op: str
    left: Node
    right: Node


@dataclass(unsafe_hash=True, slots=True)
class BoolOp(Node):
    op: str  # "and" | "or"
    operands: tuple[Node, ...]


@dataclass(unsafe_hash=True, slots=True)
class Not(Node):
    operand: Node


def children(node: Node) -> list[Node]:
    """The direct sub-expressions of a node, left to right."""
    if isinstance(node, Member):
        return [node.target]
    if isinstance(node, Index):
        return [node.target, node.index]
    if isinstance(node, Call):
        return list(node.args)
    if isinstance(node, Array):
        return list(node.items)
    if isinstance(node, Compare):
        return [node.left, node.right]
    if isinstance(node, BoolOp):
        return list(node.operands)
    if isinstance(node, Not):
        return [node.operand]
    return []


def walk(node: Node) -> list[Node]:
    """Every node, parents before children (iterative: expressions can be deep)."""
    out: list[Node] = []
    todo = [node]
    while todo:
        current = todo.pop()
        while type(current) is Member:  # a dotted path's spine, without a list a node
            out.append(current)
            current = current.target
        out.append(current)
        todo.extend(reversed(children(current)))
    return out
