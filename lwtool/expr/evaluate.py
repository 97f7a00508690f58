"""Evaluate expressions and render templates against a scope of roots.

Semantics (documented in the README): a missing key, an out-of-range index and any
member of null are null; `==`/`!=` compare JSON values deeply (true is not 1);
ordering compares two numbers or two strings only; `and`/`or`/`not` give booleans;
falsy are null, false, 0 and "" (arrays and objects are truthy, as in JavaScript).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lwtool.expr import ast
from lwtool.expr.functions import FUNCTIONS, EvaluationError, to_text, type_name
from lwtool.expr.template import Template


def truthy(value: Any) -> bool:
    return not (value is None or value is False or value == 0 and not isinstance(value, bool)
                or value == "")


def json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _order(op: str, a: Any, b: Any) -> bool:
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    if not numbers and not (isinstance(a, str) and isinstance(b, str)):
        raise EvaluationError(f"cannot order {type_name(a)} and {type_name(b)} with '{op}'")
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def _get(target: Any, key: Any) -> Any:
    if type(target) is dict:  # the common case, without the Mapping ABC's check
        return target.get(key) if isinstance(key, str) else None
    if isinstance(target, Mapping):
        return target.get(key) if isinstance(key, str) else None
    if isinstance(target, list) and isinstance(key, int) and not isinstance(key, bool):
        return target[key] if 0 <= key < len(target) else None
    return None


def evaluate(node: ast.Node, scope: Mapping[str, Any]) -> Any:
    """The value of one expression. Raises EvaluationError on a type error."""
    kind = type(node)  # paths first (most expressions are `steps.x.output.y`); the
    if kind is ast.Member:  # node classes are never subclassed
        names: list[str] = []
        while isinstance(node, ast.Member):  # a path is read outside in, not recursively
            names.append(node.name)
            node = node.target
        value = evaluate(node, scope)
        for name in reversed(names):
            value = _get(value, name)
        return value
    if kind is ast.Root:
        name = node.name  # type: ignore[attr-defined]
        if name not in scope:
            raise EvaluationError(f"'{name}' is not available here")
        return scope[name]
    if isinstance(node, ast.Literal):
        return node.value
    if isinstance(node, ast.Index):
        return _get(evaluate(node.target, scope), evaluate(node.index, scope))
    if isinstance(node, ast.Array):
        return [evaluate(item, scope) for item in node.items]
    if isinstance(node, ast.Call):
        function = FUNCTIONS.get(node.name)
        if function is None:
            raise EvaluationError(f"unknown function '{node.name}'")
        return function.impl(*(evaluate(arg, scope) for arg in node.args))
    if isinstance(node, ast.Not):
        return not truthy(evaluate(node.operand, scope))
    if isinstance(node, ast.BoolOp):
        if node.op == "and":
            return all(truthy(evaluate(o, scope)) for o in node.operands)
        return any(truthy(evaluate(o, scope)) for o in node.operands)
    if isinstance(node, ast.Compare):
        left, right = evaluate(node.left, scope), evaluate(node.right, scope)
        if node.op == "==":
            return json_equal(left, right)
        if node.op == "!=":
            return not json_equal(left, right)
        return _order(node.op, left, right)
    raise EvaluationError(f"cannot evaluate {type(node).__name__}")


def render(template: Template, scope: Mapping[str, Any]) -> Any:
    """A single `{{ }}` keeps its value's type; text with expressions becomes a string."""
    if template.is_single:
        node = template.parts[0].node
        assert node is not None
        return evaluate(node, scope)
    out = []
    for part in template.parts:
        out.append(part.text if part.node is None else to_text(evaluate(part.node, scope)))
    return "".join(out)
