"""`lwtool generate MODULE:ATTR -o FILE`: the document a Python generator gives, written
as YAML (or JSON for a .json name) with a lock that names the generator, so that
`lwtool check` reports `generate.stale` when the generator gives another document."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class GeneratorFailed(Exception):
    pass


def generate_document(spec: str, relative_to: Path | None = None) -> dict[str, Any]:
    """Import `MODULE:ATTR` (a `.py` path is read relative to `relative_to`) and return
    its document."""
    from lwtool.authoring.definitions import document_of

    module, sep, attr = spec.rpartition(":")
    if relative_to is not None and sep and module.endswith(".py") and \
            not Path(module).is_absolute():
        spec = f"{relative_to / module}:{attr}"
    try:
        return document_of(generator_object(spec))
    except (TypeError, ValueError, OSError) as exc:
        raise GeneratorFailed(str(exc)) from None


def generator_object(spec: str) -> Any:
    """What `MODULE:ATTR` names: a Workflow, a Definition, a dict (a function is called)."""
    from lwtool.tools import ToolsNotLoadable, load_attribute

    try:
        found = load_attribute(spec, "generator")
    except ToolsNotLoadable as exc:
        raise GeneratorFailed(str(exc)) from None
    from lwtool.authoring.builders import Workflow
    from lwtool.authoring.definitions import Definition

    if callable(found) and not isinstance(found, (Workflow, Definition)):
        found = found()
    return found


def stored_spec(spec: str, out: Path) -> str:
    """The generator as the lock records it: a `.py` path relative to the file's folder."""
    import os

    module, sep, attr = spec.rpartition(":")
    if sep and module.endswith(".py"):
        relative = os.path.relpath(Path(module).resolve(), out.parent.resolve())
        return f"{Path(relative).as_posix()}:{attr}"
    return spec
