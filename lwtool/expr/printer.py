"""AST -> expression text (used by round-trip tests and by messages)."""

from __future__ import annotations

import json
import re

from lwtool.expr import ast

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_KEYWORDS = {"and", "or", "not", "true", "false", "null"}
_PRECEDENCE = {ast.BoolOp: 1, ast.Not: 3, ast.Compare: 4}


def _prec(node: ast.Node) -> int:
    if isinstance(node, ast.BoolOp):
        return 1 if node.op == "or" else 2
    return _PRECEDENCE.get(type(node), 5)


def _wrap(node: ast.Node, minimum: int) -> str:
    text = to_source(node)
    return f"({text})" if _prec(node) < minimum else text


def to_source(node: ast.Node) -> str:
    if isinstance(node, ast.Literal):
        if isinstance(node.value, str):
            return json.dumps(node.value, ensure_ascii=False)
        return json.dumps(node.value)
    if isinstance(node, ast.Root):
        return node.name
    if isinstance(node, ast.Member):
        return f"{_wrap(node.target, 5)}.{node.name}"
    if isinstance(node, ast.Index):
        return f"{_wrap(node.target, 5)}[{to_source(node.index)}]"
    if isinstance(node, ast.Array):
        return "[" + ", ".join(to_source(i) for i in node.items) + "]"
    if isinstance(node, ast.Call):
        return f"{node.name}(" + ", ".join(to_source(a) for a in node.args) + ")"
    if isinstance(node, ast.Not):
        return f"not {_wrap(node.operand, 3)}"
    if isinstance(node, ast.Compare):
        return f"{_wrap(node.left, 5)} {node.op} {_wrap(node.right, 5)}"
    if isinstance(node, ast.BoolOp):
        mine = _prec(node)
        return f" {node.op} ".join(_wrap(o, mine + 1) for o in node.operands)
    raise TypeError(type(node).__name__)


def is_member_name(name: str) -> bool:
    return bool(_NAME.match(name)) and name not in _KEYWORDS
