"""A pipeline names a workflow file that is missing, invalid or not a definition.

## What it flags
An entry of a Pipeline's `workflows` (read relative to the pipeline file) that does
not exist, cannot be loaded, is neither a WorkflowDefinition nor a Pipeline (a nested
pipeline), is a definition or nested pipeline with errors, or is a pipeline that
lists, directly or through others, the pipeline itself (the message names the chain);
and two entries with the same `id`.

## Why
The orchestrator plans and runs workflows by their definition's id. A pipeline that
names a file it cannot use fails only when the orchestrator first calls it, possibly
after other sub-runs have spent time and tokens; this finding says so at the line of
the entry, before anything runs.

## Example
```yaml
apiVersion: littleworkflow.dev/v0.1
kind: Pipeline
id: numbers
workflows: [missing.definition.yaml]
orchestrator: {model: orchestrator}
```

## Instead
```yaml
apiVersion: littleworkflow.dev/v0.1
kind: Pipeline
id: numbers
workflows: [examples/pipeline/double.definition.yaml]
orchestrator: {model: orchestrator}
```
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lwtool.source.finding import Finding, Severity
from lwtool.validate.children import is_nested
from lwtool.validate.context import Context

CODE = "pipeline.invalid_workflow"
APPLIES_TO = ("Pipeline",)


def check(ctx: Context) -> Iterator[Finding]:
    entries = ctx.value.get("workflows") if isinstance(ctx.value, dict) else None
    if not isinstance(entries, list):
        return
    seen: dict[str, str] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, str) or not entry:
            continue  # the schema's finding
        pointer = f"/workflows/{index}"
        workflow_id, problem = _problem(Path(ctx.path).parent / entry,
                                        (Path(ctx.path).resolve(),), is_nested(ctx))
        if problem is not None:
            yield ctx.finding(pointer, f"workflow '{entry}' {problem}")
        elif workflow_id in seen:
            yield ctx.finding(pointer, f"workflow '{entry}' has the id '{workflow_id}', as "
                              f"'{seen[workflow_id]}' does: ids name the pipeline's "
                              "workflows, so each must be unique")
        elif workflow_id is not None:
            seen[workflow_id] = entry


def _problem(path: Path, chain: tuple[Path, ...], nested: bool = False
             ) -> tuple[str | None, str | None]:
    """(the definition's or nested pipeline's id, None) for a usable entry; else (None,
    what is wrong). `chain`: the pipeline files listing this entry, outermost first (a
    nested pipeline is read with its own entries, which this walk checks, so a cycle
    is found and never followed); `nested`: the pipeline is itself being read so."""
    from lwtool.source.loader import LoadFailed, load_path
    from lwtool.validate.run import document_kind, validate_document

    if not path.is_file():
        return None, "does not exist (paths are relative to the pipeline file)"
    try:
        document = load_path(path)
    except LoadFailed as exc:
        return None, f"cannot be loaded: {_first(exc.findings)}"
    except OSError as exc:
        return None, f"cannot be read: {exc.strerror}"
    kind = document_kind(document)
    if kind == "Pipeline":
        return _pipeline_problem(path, document, chain, nested)
    if kind != "WorkflowDefinition":
        return None, f"is not a WorkflowDefinition (its kind: {kind or 'none'})"
    errors = [f for f in validate_document(document) if f.severity is Severity.ERROR]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return None, f"is not a valid WorkflowDefinition: {_first(errors)}{more}"
    return str(document.value["id"]), None


def _pipeline_problem(path: Path, document: Any, chain: tuple[Path, ...], nested: bool
                      ) -> tuple[str | None, str | None]:
    """A nested pipeline: (its id, None), or (None, what is wrong with it or under it)."""
    from lwtool.validate.run import validate_document

    here = path.resolve()
    if here in chain:
        names = " -> ".join(p.name for p in (*chain[chain.index(here):], here))
        return None, f"makes a cycle of pipelines: {names}"
    if nested:  # read by an outer pipeline's walk, which checks this one's entries
        return str(document.value.get("id")), None
    errors = [f for f in validate_document(document, nested=True)
              if f.severity is Severity.ERROR]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return None, f"is not a valid Pipeline: {_first(errors)}{more}"
    for entry in document.value.get("workflows") or []:
        if isinstance(entry, str) and entry:
            _, problem = _problem(path.parent / entry, (*chain, here))
            if problem is not None:
                return None, f"lists '{entry}', which {problem}"
    return str(document.value.get("id")), None


def _first(findings: list[Finding]) -> str:
    first = findings[0]
    return f"{first.path}:{first.line}:{first.column} {first.code} {first.message}"
