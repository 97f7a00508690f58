"""`workflow.invoke` and `map`: a workflow's children locked into its version.

A child named by a file (`with.workflow: ./score.lwir.yaml`, relative to the invoking
file) is read, locked itself (its own children first), and replaced in the locked LWIR
by its WorkflowVersion id: the parent's id is the hash of that locked document, so it
covers every descendant, and editing a child changes the parent's id. A child named by
a version id (`sha256:...`) is locked as it is; the world must hold that version when a
run starts. A workflow that reaches itself through invokes is refused, naming the
chain.

A child is named at a *site*: the `with` of a workflow.invoke or map step (its
`workflow`), and a map's `with.reduce` (its `workflow`). `child_sites` walks them; a
site's key in lock files is its step's pointer (`with` left off) or the reduce's."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

INVOKE = "workflow.invoke"
MAP = "map"
CHILD_STEPS = (INVOKE, MAP)
VERSION_ID = re.compile(r"sha256:[0-9a-f]{64}")
GRANT_KINDS = ("tools", "models", "secrets", "network")  # what a child may reach, within its parent


@dataclass
class Locked:
    """An LWIR document with its children locked, and every version it reaches through
    invokes (children, theirs, ...: id -> locked LWIR). Its version id is computed when
    asked (a caller that canonicalizes the document anyway takes it from there)."""

    lwir: dict[str, Any]
    children: dict[str, dict[str, Any]] = field(default_factory=dict)

    @cached_property
    def version_id(self) -> str:
        from lwtool.canonical.digest import workflow_version_id

        return workflow_version_id(self.lwir)


class ChildProblem(ValueError):
    """A child that cannot be locked: `pointer` is the invoke's `with/workflow` in the
    invoking document, `message` what is wrong, `cycle` whether it is a cycle."""

    def __init__(self, message: str, pointer: str, cycle: bool = False) -> None:
        super().__init__(message)
        self.message, self.pointer, self.cycle = message, pointer, cycle


def steps_of(lwir: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(JSON Pointer, step) of every step, parallel bodies included."""
    if not isinstance(lwir, dict):
        return
    todo: list[tuple[str, Any]] = [("/steps", lwir.get("steps"))]
    while todo:
        pointer, steps = todo.pop(0)
        if not isinstance(steps, list):
            continue
        for index, step in enumerate(steps):
            if isinstance(step, dict):
                yield f"{pointer}/{index}", step
                todo.append((f"{pointer}/{index}/steps", step.get("steps")))


def child_sites(lwir: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(JSON Pointer, holder) of every place naming a child workflow: the `with` of each
    workflow.invoke and map step, and each map's `with.reduce` (see the module)."""
    for pointer, step in steps_of(lwir):
        settings = step.get("with")
        if step.get("uses") not in CHILD_STEPS or not isinstance(settings, dict):
            continue
        yield f"{pointer}/with", settings
        if step.get("uses") == MAP and isinstance(settings.get("reduce"), dict):
            yield f"{pointer}/with/reduce", settings["reduce"]


def site_key(pointer: str) -> str:
    """A site's key in lock files: its step's pointer for `with`, else its own."""
    return pointer.removesuffix("/with")


def child_ref(holder: dict[str, Any]) -> str | None:
    """What a site names (a file or a version id), None when it names nothing."""
    ref = holder.get("workflow")
    return ref if isinstance(ref, str) and ref else None


def is_version_id(ref: str) -> bool:
    return VERSION_ID.fullmatch(ref) is not None


def lock_children(lwir: dict[str, Any], folder: Path,
                  load: Callable[[Path], dict[str, Any]],
                  chain: tuple[Path, ...] = ()) -> Locked:
    """`lwir` (read from a file in `folder`) with each file-named child locked. `load`
    reads a child file as LWIR (raising ChildProblem-worthy errors as ValueError with a
    message); `chain` is the files invoking this one (a cycle names them)."""
    found = list(child_sites(lwir))
    if not any(ref is not None and not is_version_id(ref)
               for ref in (child_ref(holder) for _, holder in found)):
        return Locked(lwir)
    locked = copy.deepcopy(lwir)
    children: dict[str, dict[str, Any]] = {}
    for pointer, _ in found:
        holder = _at(locked, pointer)
        ref = child_ref(holder)
        if ref is None or is_version_id(ref):
            continue
        where = f"{pointer}/workflow"
        path = (folder / ref).resolve()
        if path in chain:
            names = " -> ".join(p.name for p in (*chain[chain.index(path):], path))
            raise ChildProblem(f"workflow.invoke makes a cycle: {names}", where, cycle=True)
        try:
            child = load(path)
        except FileNotFoundError:
            raise ChildProblem(f"child workflow {ref} does not exist (paths are relative "
                               "to the invoking file)", where) from None
        except ValueError as exc:
            raise ChildProblem(f"child workflow {ref}: {exc}", where) from None
        try:
            inner = lock_children(child, path.parent, load, (*chain, path))
        except ChildProblem as problem:
            raise ChildProblem(problem.message if problem.cycle else
                               f"child workflow {ref}: {problem.message}", where,
                               problem.cycle) from None
        holder["workflow"] = inner.version_id
        children[inner.version_id] = inner.lwir
        children.update(inner.children)
    return Locked(locked, children)


def child_of(locked: Locked, pointer: str) -> dict[str, Any] | None:
    """The locked child LWIR the site at `pointer` runs (None: named by a version id
    this lock does not hold)."""
    ref = child_ref(_at(locked.lwir, pointer))
    return locked.children.get(ref) if ref is not None else None


def reach(lwir: dict[str, Any], children: dict[str, dict[str, Any]],
          seen: frozenset[str] = frozenset()) -> dict[str, set[str]]:
    """Every tool, model slot, secret and host pattern a run of `lwir` may reach: its
    `permissions`, and its children's (from `children`, id -> locked LWIR), theirs, ..."""
    grants = lwir.get("permissions") or {}
    out = {kind: {str(n) for n in grants.get(kind) or [] if isinstance(n, str)}
           for kind in GRANT_KINDS}
    for _, holder in child_sites(lwir):
        ref = child_ref(holder)
        child = children.get(ref) if ref is not None else None
        if ref is not None and child is not None and ref not in seen:
            for kind, names in reach(child, children, seen | {ref}).items():
                out[kind] |= names
    return out


def wider_grants(parent: dict[str, Any], child: dict[str, Any],
                 children: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """What `child` (and its descendants) may reach that `parent`'s permissions do not
    grant, by kind (tools, models, secrets, network); empty when nothing. A host
    pattern is granted when one of the parent's covers it (`*.example.com` covers
    `api.example.com:443`)."""
    granted = parent.get("permissions") or {}
    out = {}
    for kind, names in reach(child, children).items():
        own = {str(n) for n in granted.get(kind) or []}
        wider = sorted(uncovered_hosts(names, own) if kind == "network" else names - own)
        if wider:
            out[kind] = wider
    return out


def uncovered_hosts(patterns: set[str], granted: set[str]) -> set[str]:
    """The host patterns none of `granted` covers (one that does not parse: unless
    listed as it is; invalid_host names it)."""
    from lwtool.capability.hosts import BadPattern, HostPattern

    parents = []
    for text in granted:
        try:
            parents.append(HostPattern.parse(text))
        except BadPattern:
            continue
    out = set()
    for text in patterns - granted:
        try:
            pattern = HostPattern.parse(text)
        except BadPattern:
            out.add(text)
            continue
        if not any(p.covers(pattern) for p in parents):
            out.add(text)
    return out


def _at(lwir: dict[str, Any], pointer: str) -> dict[str, Any]:
    node: Any = lwir
    for part in pointer.strip("/").split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    assert isinstance(node, dict)
    return node
