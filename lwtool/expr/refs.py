"""What an expression reads: its roots and, for `steps`, which step and accessor."""

from __future__ import annotations

from dataclasses import dataclass

from lwtool.expr import ast
from lwtool.expr.template import Part


@dataclass(frozen=True, slots=True)
class Reference:
    """One root use. For `steps.<id>.<accessor>`, `step` and `accessor` are set
    (accessor is None when missing). `start`/`end` are offsets in the whole value."""

    root: str
    start: int
    end: int
    step: str | None = None
    accessor: str | None = None


def _name_of(node: ast.Node) -> str | None:
    """The member name of `x.name` or `x["name"]`."""
    if isinstance(node, ast.Member):
        return node.name
    if isinstance(node, ast.Index) and isinstance(node.index, ast.Literal) and isinstance(
            node.index.value, str):
        return node.index.value
    return None


def references(part: Part) -> list[Reference]:
    node = part.node
    if node is None:
        return []
    chain = _dotted(node)
    if chain is not None:  # most expressions: `steps.fetch.output.name`, `input.x`
        return [_dotted_reference(chain, part.offset)]
    return walked_references(part)


def _dotted(node: ast.Node) -> list[ast.Node] | None:
    """A plain dotted path's nodes from its root up, else None."""
    chain: list[ast.Node] = []
    while type(node) is ast.Member:
        chain.append(node)
        node = node.target
    if type(node) is not ast.Root:
        return None
    chain.append(node)
    chain.reverse()
    return chain


def _dotted_reference(chain: list[ast.Node], base: int) -> Reference:
    """What `walked_references` finds in a dotted path, without its walk."""
    root = chain[0]
    assert isinstance(root, ast.Root)
    start = base + root.start
    if root.name != "steps" or len(chain) == 1:
        return Reference(root.name, start, base + root.end)
    step, accessor = chain[1], chain[2] if len(chain) > 2 else None
    assert isinstance(step, ast.Member)
    if accessor is None:
        return Reference("steps", start, base + step.end, step.name)
    assert isinstance(accessor, ast.Member)
    return Reference("steps", start, base + accessor.end, step.name, accessor.name)


def walked_references(part: Part) -> list[Reference]:
    """Every root use in any expression: a walk of its nodes with their parents."""
    node = part.node
    if node is None:
        return []
    parents: dict[int, ast.Node] = {}
    nodes = ast.walk(node)
    for current in nodes:
        for child in ast.children(current):
            parents[id(child)] = current
    base = part.offset
    refs: list[Reference] = []
    for current in nodes:
        if not isinstance(current, ast.Root):
            continue
        if current.name != "steps":
            refs.append(Reference(current.name, base + current.start, base + current.end))
            continue
        step_node = parents.get(id(current))
        step_id = _name_of(step_node) if step_node is not None and _target(step_node) is current \
            else None
        if step_node is None or step_id is None:
            refs.append(Reference("steps", base + current.start, base + current.end))
            continue
        accessor_node = parents.get(id(step_node))
        accessor = _name_of(accessor_node) if accessor_node is not None and _target(
            accessor_node) is step_node else None
        end_node = accessor_node if accessor is not None and accessor_node is not None \
            else step_node
        refs.append(Reference("steps", base + current.start, base + end_node.end, step_id,
                              accessor))
    return refs


def _target(node: ast.Node) -> ast.Node | None:
    return node.target if isinstance(node, (ast.Member, ast.Index)) else None
