"""`lwtool generate MODULE:ATTR -o FILE`: write what a Python generator gives."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli import exit_codes
from lwtool.cli.render import FileReport, render_text
from lwtool.cli.runtime_options import fail


def generate(
    spec: Annotated[str, typer.Argument(help="MODULE:ATTR (or file.py:ATTR): a Workflow, a "
                                        "Definition, a dict, or a function returning one.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The file to write (YAML, or JSON "
                                      "for a .json name); its lock goes beside it.")],
) -> None:
    """Write a workflow or definition built in Python, validated, with its lock."""
    from lwtool.authoring.definitions import document_of
    from lwtool.authoring.generate import GeneratorFailed, generator_object, stored_spec
    from lwtool.compile import compile_file
    from lwtool.lock.io import LockNotWritable, write_lock, write_text_atomically
    from lwtool.lock.model import lock_for
    from lwtool.lock.paths import lock_path_for
    from lwtool.planner.emit import document_text
    from lwtool.source.finding import Severity
    from lwtool.source.loader import load_text
    from lwtool.validate.run import document_kind, validate_document

    try:
        made = generator_object(spec)
        document = document_of(made)
        text = document_text(document, out)
        children = _children_text(made, out)
    except (GeneratorFailed, ValueError) as exc:
        raise fail(f"generator {spec}: {exc}") from None
    try:
        for child, child_text in children.items():  # the Workflow objects its invokes run
            write_text_atomically(child, child_text, "a generated child workflow")
            compiled = compile_file(child)
            if not compiled.ok:
                sys.stderr.write(render_text([FileReport(str(child), compiled.findings)]))
                raise fail(f"generator {spec} gives an invalid child workflow {child}",
                           exit_codes.INVALID)
            child_lock = lock_for(child, "Workflow", compiled.value, compiled.locked())
            write_lock(lock_path_for(child), child_lock)
            sys.stdout.write(f"{child}: {child_lock.digest}\n")
    except LockNotWritable as exc:
        raise fail(str(exc)) from None
    loaded = load_text(text, str(out))
    findings = validate_document(loaded)
    kind = document_kind(loaded)
    if kind is None or any(f.severity is Severity.ERROR for f in findings):
        sys.stderr.write(render_text([FileReport(str(out), findings)]))
        raise fail(f"generator {spec} gives an invalid document; {out} was not written",
                   exit_codes.INVALID)
    lock = lock_for(out, kind, document, _locked(document, out) if kind == "Workflow" else None)
    try:
        write_text_atomically(out, text, "the generated file")
        write_lock(lock_path_for(out), replace(lock, generator=stored_spec(spec, out)))
    except LockNotWritable as exc:
        raise fail(str(exc)) from None
    sys.stdout.write(f"{out}: {lock.digest}\n")


def _children_text(found: object, out: Path) -> dict[Path, str]:
    """The child workflows (Workflow objects its invokes run) a generator's workflow
    names, as files beside `out`: path -> text."""
    from lwtool.authoring.builders import Workflow
    from lwtool.planner.emit import document_text

    if not isinstance(found, Workflow):
        return {}
    return {out.parent / name: document_text(child.document(), out.parent / name)
            for name, child in found.files().items()}


def _locked(document: dict[str, Any], out: Path) -> Any:
    """The generated workflow with its children locked (read beside `out`)."""
    from lwtool.validate.children import load_child
    from lwtool.validate.invokes import lock_children

    return lock_children(document, out.parent, load_child, (out.resolve(),))
