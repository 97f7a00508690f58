"""Split a string value into literal text and `{{ expression }}` parts."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from lwtool.expr import ast
from lwtool.expr.parser import ExprSyntaxError, parse_expression, simple_path


@dataclass(frozen=True, slots=True)
class Part:
    """Literal text (`node` None) or one expression; `offset` is where the expression
    text (after `{{`) starts inside the whole string value."""

    text: str
    node: ast.Node | None = None
    offset: int = 0


@dataclass(frozen=True, slots=True)
class Template:
    parts: tuple[Part, ...]

    @property
    def is_single(self) -> bool:
        """The whole value is one `{{ }}`: it evaluates to a value of any type."""
        return len(self.parts) == 1 and self.parts[0].node is not None

    @property
    def expressions(self) -> list[Part]:
        return [p for p in self.parts if p.node is not None]


def has_template(value: str) -> bool:
    return "{{" in value


def split(value: str) -> list[tuple[str, int, bool]]:
    """(text, offset, is_expression) pieces; raises ExprSyntaxError on an unclosed `{{`.
    Quotes inside an expression are respected, so `"}}"` in a string literal is text."""
    pieces: list[tuple[str, int, bool]] = []
    i = 0
    n = len(value)
    while i < n:
        start = value.find("{{", i)
        if start < 0:
            pieces.append((value[i:], i, False))
            break
        if start > i:
            pieces.append((value[i:start], i, False))
        j, quote = start + 2, ""
        close = value.find("}}", j)
        if close >= 0 and '"' not in value[j:close] and "'" not in value[j:close]:
            j = close  # no quote before the first `}}`: nothing can hide it
        while j < n:
            char = value[j]
            if quote:
                if char == "\\":
                    j += 1
                elif char == quote:
                    quote = ""
            elif char in "\"'":
                quote = char
            elif value.startswith("}}", j):
                break
            j += 1
        if j >= n:
            raise ExprSyntaxError("'{{' is not closed by '}}'", start)
        pieces.append((value[start + 2:j], start + 2, True))
        i = j + 2
    return pieces


@lru_cache(maxsize=4096)
def parse_template(value: str) -> Template:
    """Parse every `{{ }}` in `value`; ExprSyntaxError offsets are relative to `value`.
    Memoized: a Template is immutable, and the runtime renders the same strings for
    every visit and branch."""
    if value.startswith("{{") and value.endswith("}}"):  # the common `{{ a.b.c }}`
        inner = value[2:-2]
        node = simple_path(inner)
        if node is not None:
            return Template((Part(inner, node, 2),))
    parts: list[Part] = []
    for text, offset, is_expr in split(value):
        if not is_expr:
            parts.append(Part(text))
            continue
        try:
            node = parse_expression(text)
        except ExprSyntaxError as exc:
            raise ExprSyntaxError(exc.message, offset + exc.offset, exc.code) from None
        parts.append(Part(text, node, offset))
    return Template(tuple(parts))
