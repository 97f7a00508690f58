"""Compare committed files with their locks (`lock.stale`, `lock.missing`, `lock.invalid`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwtool.compile import compile_file
from lwtool.lock.io import LockUnreadable, locked_digest, read_lock
from lwtool.lock.paths import lock_path_for
from lwtool.source.finding import Finding, Severity
from lwtool.source.position import FILE_START


def lock_file_findings(path: Path) -> list[Finding]:
    """A lock file given to `lwtool validate` is read as a lock: `lock.invalid` when it
    is not one (it is not LWIR, so `lwir.unknown_kind` would say nothing useful)."""
    try:
        read_lock(path)
    except LockUnreadable as exc:
        return [Finding("lock.invalid", str(exc), str(path), "", FILE_START)]
    return []


def check_file(path: Path) -> list[Finding]:
    compiled = compile_file(path)
    findings = list(compiled.findings)
    if not compiled.ok:
        return findings
    lock_file = lock_path_for(path)
    if not lock_file.exists():
        findings.append(Finding("lock.missing", f"no lock beside this file; run `lwtool lock "
                                f"{path}` and commit {lock_file.name}", str(path), "", FILE_START,
                                Severity.WARNING))
        return findings
    try:
        data = read_lock(lock_file)
    except LockUnreadable as exc:
        findings.append(Finding("lock.invalid", str(exc), str(path), "", FILE_START))
        return findings
    locked, current = locked_digest(data), compiled.digest()
    generator = data.get("generator")
    if isinstance(generator, str) and locked == current:
        findings.extend(_generated_stale(path, generator, current, compiled.kind))
    if locked != current:
        what = _changed_children(data, compiled) or "the file changed"
        findings.append(Finding("lock.stale", f"{what} since it was locked "
                                f"({lock_file.name} has {locked[:19]}…, the file is now "
                                f"{current[:19]}…); review the change, then run `lwtool lock "
                                f"{path}`", str(path), "", FILE_START))
    return findings


def _changed_children(data: dict[str, Any], compiled: Any) -> str | None:
    """`child workflow ./score.lwir.yaml (at /steps/1) changed`: the invokes whose
    locked child version is not the one the lock records (None: none, or no record)."""
    recorded = data.get("children")
    if compiled.kind != "Workflow" or not isinstance(recorded, dict):
        return None
    from lwtool.validate.invokes import child_ref, child_sites, site_key

    now = {site_key(pointer): child_ref(holder)
           for pointer, holder in child_sites(compiled.locked().lwir)}
    written = {site_key(pointer): child_ref(holder)
               for pointer, holder in child_sites(compiled.value)}
    changed = [f"{written.get(pointer)} (at {pointer})" for pointer, ref in now.items()
               if pointer in recorded and recorded[pointer] != ref]
    if not changed:
        return None
    return f"child workflow{'s' if len(changed) > 1 else ''} {', '.join(changed)} changed"


def _fresh_digest(kind: str, document: dict[str, Any], path: Path) -> str:
    """The id of what a generator gives, as if written at `path` (an LWIR's children
    locked from beside it; one that cannot be is an id no lock holds)."""
    from lwtool.authoring.snapshot import digest_of

    if kind != "Workflow":
        return digest_of(kind, document, path.parent)
    from lwtool.validate.children import load_child
    from lwtool.validate.invokes import ChildProblem, lock_children

    try:
        return lock_children(document, path.parent, load_child, (path.resolve(),)).version_id
    except ChildProblem as problem:
        return f"(a child that cannot be locked: {problem.message})"


def _generated_stale(path: Path, generator: str, current: str, kind: str | None
                     ) -> list[Finding]:
    """A generated file whose generator now gives another document (`generate.stale`)."""
    from lwtool.authoring.generate import GeneratorFailed, generate_document

    try:
        document = generate_document(generator, path.parent)
    except GeneratorFailed as exc:
        return [Finding("generate.stale", f"cannot run its generator {generator}: {exc}",
                        str(path), "", FILE_START)]
    fresh = _fresh_digest(str(document.get("kind", kind)), document, path)
    if fresh == current:
        return []
    return [Finding("generate.stale", f"the file no longer matches its generator "
                    f"{generator} (it gives {fresh[:19]}…, the file is {current[:19]}…); run "
                    f"`lwtool generate {generator} -o {path}`", str(path), "", FILE_START)]
