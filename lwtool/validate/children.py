"""A workflow's children (`workflow.invoke`), locked once per document for the rules
that check them (lwtool.validate.invokes does the locking). A child file is read with
every rule but these: its own children are locked by the lock that reads it, which
also finds a cycle (and never follows one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lwtool.validate.context import Context
from lwtool.validate.invokes import (
    ChildProblem,
    Locked,
    child_of,
    child_ref,
    child_sites,
    is_version_id,
)

NESTED = "children.nested"  # Context._cache key: a child read for its parent's lock
_LOCKED = "children.locked"


def is_nested(ctx: Context) -> bool:
    return bool(ctx._cache.get(NESTED))


def locked_of(ctx: Context) -> Locked | ChildProblem | None:
    """The document's children locked, or the first problem; None when it names no
    child file (or is itself a child being read)."""
    if is_nested(ctx) or not any(
            (ref := child_ref(holder)) is not None and not is_version_id(ref)
            for _, holder in child_sites(ctx.value)):
        return None
    if _LOCKED not in ctx._cache:
        from lwtool.validate.invokes import lock_children

        try:
            ctx._cache[_LOCKED] = lock_children(ctx.value, Path(ctx.path).parent,
                                                load_child, (Path(ctx.path).resolve(),))
        except ChildProblem as problem:
            ctx._cache[_LOCKED] = problem
    found: Locked | ChildProblem = ctx._cache[_LOCKED]
    return found


def invoked_children(ctx: Context) -> Iterator[tuple[str, dict[str, Any], dict[str, Any],
                                                     Locked]]:
    """(site pointer, its holder, the child's locked LWIR, the document's lock) of every
    child site (lwtool.validate.invokes.child_sites) whose child file was locked (none
    when the document could not be)."""
    locked = locked_of(ctx)
    if not isinstance(locked, Locked):
        return
    for pointer, holder in child_sites(ctx.value):
        child = child_of(locked, pointer)
        if child is not None:
            yield pointer, holder, child, locked


def load_child(path: Path) -> dict[str, Any]:
    """A child file's LWIR; ValueError saying what is wrong with it (FileNotFoundError
    when there is none)."""
    from lwtool.source.finding import Severity
    from lwtool.source.loader import LoadFailed, load_path
    from lwtool.validate.run import document_kind, validate_document

    try:
        document = load_path(path)
    except LoadFailed as failed:
        raise ValueError(f"does not load: {_first(failed.findings)}") from None
    except IsADirectoryError:
        raise ValueError("is a folder, not a file") from None
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ValueError(f"cannot be read: {exc.strerror or exc}") from None
    kind = document_kind(document)
    if kind != "Workflow":
        raise ValueError(f"is {'a ' + kind if kind else 'not a workflow'}, not LWIR "
                         "(kind: Workflow)")
    errors = [f for f in validate_document(document, nested=True)
              if f.severity is Severity.ERROR]
    if errors:
        raise ValueError(f"is not valid: {_first(errors)}")
    value: dict[str, Any] = document.value
    return value


def _first(findings: list[Any]) -> str:
    first = findings[0]
    more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
    return f"{first.message} at {first.span.start.line}:{first.span.start.column}" \
        f" [{first.code}]{more}"
