"""Lark parse tree -> expression AST (lwtool.expr.ast)."""

from __future__ import annotations

import json
from typing import Any

from lark import Token, Transformer, v_args

from lwtool.expr import ast


def _span(meta: Any) -> dict[str, int]:
    return {"start": meta.start_pos, "end": meta.end_pos} if not meta.empty else {}


def _tok(token: Token) -> dict[str, int]:
    return {"start": token.start_pos or 0, "end": token.end_pos or 0}


def _operands(children: list[Any]) -> tuple[ast.Node, ...]:
    return tuple(c for c in children if not isinstance(c, Token))


@v_args(meta=True)
class ToAst(Transformer[Token, ast.Node]):
    def root(self, meta: Any, children: list[Token]) -> ast.Node:
        return ast.Root(str(children[0]), **_tok(children[0]))

    def call(self, meta: Any, children: list[Any]) -> ast.Node:
        name, args = children[0], children[1] if len(children) > 1 else None
        return ast.Call(str(name), tuple(args or ()), name_end=name.end_pos or 0, **_span(meta))

    def array(self, meta: Any, children: list[Any]) -> ast.Node:
        args = children[0] if children else None
        return ast.Array(tuple(args or ()), **_span(meta))

    def arguments(self, meta: Any, children: list[ast.Node]) -> list[ast.Node]:
        return list(children)

    def member(self, meta: Any, children: list[Any]) -> ast.Node:
        return ast.Member(children[0], str(children[1]), **_span(meta))

    def member_name(self, meta: Any, children: list[Token]) -> str:
        return str(children[0])

    def index(self, meta: Any, children: list[ast.Node]) -> ast.Node:
        return ast.Index(children[0], children[1], **_span(meta))

    def comparison(self, meta: Any, children: list[Any]) -> ast.Node:
        left, op, right = children
        return ast.Compare(str(op), left, right, **_span(meta))

    def or_test(self, meta: Any, children: list[Any]) -> ast.Node:
        return ast.BoolOp("or", _operands(children), **_span(meta))

    def and_test(self, meta: Any, children: list[Any]) -> ast.Node:
        return ast.BoolOp("and", _operands(children), **_span(meta))

    def not_op(self, meta: Any, children: list[Any]) -> ast.Node:
        return ast.Not(_operands(children)[0], **_span(meta))

    def string(self, meta: Any, children: list[Token]) -> ast.Node:
        return ast.Literal(json.loads(children[0]), **_tok(children[0]))

    def sq_string(self, meta: Any, children: list[Token]) -> ast.Node:
        raw = str(children[0])[1:-1]
        return ast.Literal(raw.replace("\\'", "'").replace("\\\\", "\\"), **_tok(children[0]))

    def number(self, meta: Any, children: list[Token]) -> ast.Node:
        text = str(children[0])
        value: int | float = float(text) if any(c in text for c in ".eE") else int(text)
        return ast.Literal(value, **_tok(children[0]))

    def true(self, meta: Any, children: list[Token]) -> ast.Node:
        return ast.Literal(True, **_tok(children[0]))

    def false(self, meta: Any, children: list[Token]) -> ast.Node:
        return ast.Literal(False, **_tok(children[0]))

    def null(self, meta: Any, children: list[Token]) -> ast.Node:
        return ast.Literal(None, **_tok(children[0]))
