"""`lwtool generate MODULE:ATTR -o FILE`: write what a Python generator gives."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated

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
    from lwtool.authoring.generate import GeneratorFailed, generate_document, stored_spec
    from lwtool.lock.io import LockNotWritable, write_lock, write_text_atomically
    from lwtool.lock.model import lock_for
    from lwtool.lock.paths import lock_path_for
    from lwtool.planner.emit import document_text
    from lwtool.source.finding import Severity
    from lwtool.source.loader import load_text
    from lwtool.validate.run import document_kind, validate_document

    try:
        document = generate_document(spec)
        text = document_text(document, out)
    except (GeneratorFailed, ValueError) as exc:
        raise fail(f"generator {spec}: {exc}") from None
    loaded = load_text(text, str(out))
    findings = validate_document(loaded)
    kind = document_kind(loaded)
    if kind is None or any(f.severity is Severity.ERROR for f in findings):
        sys.stderr.write(render_text([FileReport(str(out), findings)]))
        raise fail(f"generator {spec} gives an invalid document; {out} was not written",
                   exit_codes.INVALID)
    lock = lock_for(out, kind, document)
    try:
        write_text_atomically(out, text, "the generated file")
        write_lock(lock_path_for(out), replace(lock, generator=stored_spec(spec, out)))
    except LockNotWritable as exc:
        raise fail(str(exc)) from None
    sys.stdout.write(f"{out}: {lock.digest}\n")
