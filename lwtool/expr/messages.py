"""Friendly syntax messages, chosen by labelled bad examples (lark's match_examples)."""

from __future__ import annotations

import re
from typing import Any

# Characters the lexer cannot place: the character itself says what was meant.
_CHARACTERS = {
    "=": "'=' is not an operator; compare with '=='",
    "&": "'&&' is not an operator; use 'and'",
    "|": "'||' is not an operator; use 'or'",
    "!": "'!' is not an operator; use 'not' (or '!=' to compare)",
    "+": "there is no arithmetic in expressions",
    "*": "there is no arithmetic in expressions",
    "/": "there is no arithmetic in expressions",
    "%": "there is no arithmetic in expressions",
    "-": "there is no arithmetic in expressions",
    "{": "'{' cannot stand inside an expression (is a '}}' missing?)",
    "}": "'}' cannot stand inside an expression",
}

# Parser states, labelled by examples that end in them.
_EXAMPLES: dict[str, list[str]] = {
    "a parenthesis or bracket is not closed": ["(a", "f(a", "a[0", "[1, 2"],
    "a closing parenthesis or bracket has no opening one": ["a)", "a]"],
    "a member name is missing after '.'": ["a.", "a.1", "a..b"],
    "two values stand side by side without an operator between them": ["a b", "1 2", "a 'x'"],
    "comparisons cannot be chained; join them with 'and'": ["a < b < c", "a == b == c"],
}


_FILTER = re.compile(r"([A-Za-z_]\w*)\s*(?:\((.*)\))?")


def _filter_message(left: str, right: str) -> str:
    """`x | contains('bug')` (a template filter): say so, with the call to write."""
    found = _FILTER.fullmatch(right)
    if not left or found is None:
        return "'|' is not an operator; use 'or' to join conditions"
    name, args = found.group(1), (found.group(2) or "").strip()
    call = f"{name}({left}, {args})" if args else f"{name}({left})"
    return f"filters ('| {name}') are not supported; call the function: {call}"


def explain(parser: Any, text: str, exc: Any) -> str:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    if isinstance(exc, UnexpectedCharacters):
        at = exc.pos_in_stream or 0
        char = text[at]
        if char == "|" and text[at + 1:at + 2] != "|":
            return _filter_message(text[:at].strip(), text[at + 1:].strip())
        return _CHARACTERS.get(char, f"unexpected character {char!r}")
    try:
        label = exc.match_examples(parser.parse, _EXAMPLES, use_accepts=True)
    except Exception:  # noqa: BLE001 - a message helper must never turn into a crash
        label = None
    if label:
        return str(label)
    if isinstance(exc, UnexpectedEOF):
        return "the expression ends too early"
    if isinstance(exc, UnexpectedToken):
        if exc.token.type == "$END":
            return "the expression ends too early"
        return f"unexpected {str(exc.token)!r}"
    return "invalid expression"
