"""RFC 6901 JSON Pointers (escape, join, split)."""

from __future__ import annotations

from collections.abc import Iterable


def escape(token: str | int) -> str:
    text = str(token)
    if "~" in text or "/" in text:
        return text.replace("~", "~0").replace("/", "~1")
    return text


def join(parent: str, token: str | int) -> str:
    return f"{parent}/{escape(token)}"


def from_parts(parts: Iterable[str | int]) -> str:
    return "".join("/" + escape(p) for p in parts)


def split(pointer: str) -> list[str]:
    if not pointer:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def parent(pointer: str) -> str:
    return pointer[: pointer.rfind("/")] if pointer else ""


def resolve(document: object, pointer: str) -> object:
    """The value at `pointer`, or raise KeyError."""
    node = document
    for token in split(pointer):
        if isinstance(node, dict):
            node = node[token]
        elif isinstance(node, list):
            node = node[int(token)]
        else:
            raise KeyError(pointer)
    return node
