"""Parse one expression (the text between {{ and }}) into an AST.

The Lark LALR parser is built once per process from grammar/expr.lark. Inputs are
bounded before parsing (length and bracket depth), so that a pathological expression
costs a finding, never a stack overflow or quadratic time.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from lwtool._resources import grammar_path
from lwtool.expr import ast

MAX_EXPRESSION_CHARS = 4000
MAX_EXPRESSION_DEPTH = 32


class ExprSyntaxError(ValueError):
    """A syntax error at `offset` (a character offset in the expression text)."""

    def __init__(self, message: str, offset: int, code: str = "expr.syntax") -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.code = code


@cache
def _parser() -> Any:
    from lwtool.expr._lark import import_lark

    import_lark()
    from lark import Lark

    return Lark(grammar_path().read_text(encoding="utf-8"), parser="lalr",
                propagate_positions=True, maybe_placeholders=False,
                # A cached parse table (in the temp dir, keyed by grammar hash) saves
                # ~150 ms of table building on every cold start of `lwtool validate`.
                cache=True)


# Most expressions are plain dotted paths (`steps.fetch.output.name`). They are built
# here directly: the same AST Lark would build (a property test holds the two equal),
# at a fraction of the cost, which keeps a 1,000-step file inside its time budget.
_SIMPLE_PATH = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*)\s*\Z")
_KEYWORDS = frozenset({"and", "or", "not", "true", "false", "null"})


def _simple_path(text: str) -> ast.Node | None:
    match = _SIMPLE_PATH.match(text)
    if match is None:
        return None
    names = match.group(1).split(".")
    if names[0] in _KEYWORDS:
        return None
    offset = match.start(1)
    node: ast.Node = ast.Root(names[0], start=offset, end=offset + len(names[0]))
    end = offset + len(names[0])
    for name in names[1:]:
        end += 1 + len(name)
        node = ast.Member(node, name, start=offset, end=end)
    return node


def simple_path(text: str) -> ast.Node | None:
    """`text`'s AST when it is a plain dotted path (no lark needed), else None."""
    return _simple_path(text) if len(text) <= MAX_EXPRESSION_CHARS else None


def parse_expression(text: str) -> ast.Node:
    simple = simple_path(text)  # a dotted path has no brackets to bound
    if simple is not None:
        return simple  # lark is not even imported for these
    _check_bounds(text)
    parser = _parser()
    from lark.exceptions import UnexpectedInput

    from lwtool.expr.build import ToAst
    from lwtool.expr.messages import explain

    try:
        tree = parser.parse(text)
    except UnexpectedInput as exc:
        message = explain(parser, text, exc)
        raise ExprSyntaxError(message, getattr(exc, "pos_in_stream", None) or 0) from None
    result: ast.Node = ToAst().transform(tree)
    return result


def _check_bounds(text: str) -> None:
    if not text.strip():
        raise ExprSyntaxError("the expression is empty", 0)
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExprSyntaxError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters",
                              0, "expr.too_complex")
    depth, quote = 0, ""
    for offset, char in enumerate(text):
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "([":
            depth += 1
            if depth > MAX_EXPRESSION_DEPTH:
                raise ExprSyntaxError(
                    f"brackets nest deeper than {MAX_EXPRESSION_DEPTH} levels", offset,
                    "expr.too_complex")
        elif char in ")]":
            depth -= 1
    nots = text.split().count("not")
    if nots > MAX_EXPRESSION_DEPTH:
        raise ExprSyntaxError(f"more than {MAX_EXPRESSION_DEPTH} nested 'not'", 0,
                              "expr.too_complex")
