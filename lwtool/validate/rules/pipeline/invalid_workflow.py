"""A pipeline names a workflow file that is missing, invalid or not a definition.

## What it flags
An entry of a Pipeline's `workflows` (read relative to the pipeline file) that does
not exist, cannot be loaded, is not a WorkflowDefinition (a Pipeline there would be a
recursive pipeline, which lwtool does not run), or is a definition with errors; and
two entries whose definitions have the same `id`.

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

from lwtool.source.finding import Finding, Severity
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
        workflow_id, problem = _problem(Path(ctx.path).parent / entry)
        if problem is not None:
            yield ctx.finding(pointer, f"workflow '{entry}' {problem}")
        elif workflow_id in seen:
            yield ctx.finding(pointer, f"workflow '{entry}' has the id '{workflow_id}', as "
                              f"'{seen[workflow_id]}' does: ids name the pipeline's "
                              "workflows, so each must be unique")
        elif workflow_id is not None:
            seen[workflow_id] = entry


def _problem(path: Path) -> tuple[str | None, str | None]:
    """(the definition's id, None) for a usable definition; else (None, what is wrong)."""
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
        return None, "is itself a Pipeline: pipelines of pipelines are not supported"
    if kind != "WorkflowDefinition":
        return None, f"is not a WorkflowDefinition (its kind: {kind or 'none'})"
    errors = [f for f in validate_document(document) if f.severity is Severity.ERROR]
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return None, f"is not a valid WorkflowDefinition: {_first(errors)}{more}"
    return str(document.value["id"]), None


def _first(findings: list[Finding]) -> str:
    first = findings[0]
    return f"{first.path}:{first.line}:{first.column} {first.code} {first.message}"
