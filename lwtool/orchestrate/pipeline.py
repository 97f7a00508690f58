"""A pipeline: the workflow definitions (and nested pipelines) an orchestrator may plan
and run, and its own settings (model, system prompt, skills, maxConcurrentSubRuns,
maxSubRuns, maxDepth). Read from a `kind: Pipeline` file (paths relative to it; a
pipeline that reaches itself through others is refused, naming the chain) or given
from Python (definitions as files, dicts or what `define_workflow` returns)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_MAX_CONCURRENT_SUB_RUNS = 10
DEFAULT_MAX_SUB_RUNS = 100  # sub-runs one pipeline run may start in all
DEFAULT_MAX_DEPTH = 4  # how deep pipelines may nest under one
PIPELINE_KIND = "Pipeline"


@dataclass(frozen=True)
class Available:
    """One workflow the orchestrator may plan: its definition, the folder its relative
    paths are read from and its WorkflowDefinitionHash; or a nested pipeline (`nested`:
    its definition then holds its id and description, its hash is the pipeline
    file's, and it is run, not planned)."""

    definition: dict[str, Any]
    folder: Path
    hash: str
    nested: Pipeline | None = None

    @property
    def id(self) -> str:
        return str(self.definition["id"])

    def listed(self) -> dict[str, Any]:
        """What the orchestrator is told of it: id, description, input schema."""
        return {"workflowId": self.id, "description": self.definition.get("description", ""),
                "inputSchema": (self.definition.get("input") or {}).get("schema"),
                **({"kind": "pipeline"} if self.nested is not None else {})}


@dataclass(frozen=True)
class Pipeline:
    id: str
    workflows: tuple[Available, ...]
    model: Any  # a litellm model string (or a slot named in the models map), or scripted
    system: str = ""
    skills: tuple[str, ...] = ()
    max_concurrent_sub_runs: int = DEFAULT_MAX_CONCURRENT_SUB_RUNS
    description: str = ""
    base: Path = field(default_factory=Path.cwd)  # where relative skill paths are read
    max_sub_runs: int = DEFAULT_MAX_SUB_RUNS
    harness: str | None = None  # orchestrator.harness: MODULE:ATTR (relative to `base`)
    max_depth: int = DEFAULT_MAX_DEPTH

    def __post_init__(self) -> None:
        for name, value in (("maxConcurrentSubRuns", self.max_concurrent_sub_runs),
                            ("maxSubRuns", self.max_sub_runs), ("maxDepth", self.max_depth)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, not {value}")
        ids = [w.id for w in self.workflows]
        duplicate = next((i for i in ids if ids.count(i) > 1), None)
        if duplicate is not None:
            raise ValueError(f"two workflows of the pipeline have the id '{duplicate}'")
        if not self.workflows:
            raise ValueError("a pipeline needs at least one workflow")

    def workflow(self, workflow_id: Any) -> Available | None:
        return next((w for w in self.workflows if w.id == workflow_id), None)

    @property
    def key(self) -> str:
        """The pipeline memory store's key: sha256 of the sorted definition hashes."""
        from lwtool.harness.stores import pipeline_key

        return pipeline_key(w.hash for w in self.workflows)


def available(definition: Any, base: Path | None = None) -> Available:
    """A definition (a file, a dict, what `define_workflow` returns) checked as
    `lwtool run` checks it; raises WorkflowInvalid with its findings."""
    from lwtool.authoring.snapshot import definition_hash
    from lwtool.planner.api import checked_definition

    if isinstance(definition, Pipeline):  # a nested pipeline given from Python
        from lwtool.canonical.digest import sha256_of_json

        identity = {"id": definition.id, "workflows": sorted(w.hash for w in
                                                             definition.workflows)}
        return Available({"id": definition.id, "description": definition.description},
                         definition.base, sha256_of_json(identity), definition)
    value, folder = checked_definition(definition, base)
    return Available(value, folder, definition_hash(value, folder))


def pipeline_of(workflows: Sequence[Any], orchestrator: Mapping[str, Any],
                pipeline_id: str = "pipeline", base: Path | None = None) -> Pipeline:
    """The Python surface's pipeline: `workflows` and `orchestrator` settings
    ({model, system, skills, maxConcurrentSubRuns, maxSubRuns, maxDepth}); a Pipeline
    among `workflows` is a nested pipeline."""
    if "model" not in orchestrator:
        raise ValueError("orchestrator needs a model")
    return Pipeline(pipeline_id, tuple(available(w, base) for w in workflows),
                    orchestrator["model"], str(orchestrator.get("system") or ""),
                    tuple(orchestrator.get("skills") or ()),
                    int(orchestrator.get("maxConcurrentSubRuns",
                                         DEFAULT_MAX_CONCURRENT_SUB_RUNS)),
                    base=base or Path.cwd(),
                    max_sub_runs=int(orchestrator.get("maxSubRuns", DEFAULT_MAX_SUB_RUNS)),
                    harness=orchestrator.get("harness"),
                    max_depth=int(orchestrator.get("maxDepth", DEFAULT_MAX_DEPTH)))


def load_pipeline(path: str | Path, chain: tuple[Path, ...] = ()) -> Pipeline:
    """A `kind: Pipeline` file, validated (its definitions and nested pipelines too);
    raises WorkflowInvalid with the findings (file, line, column) when anything is
    wrong. `chain`: the pipeline files listing this one."""
    from lwtool.runtime.api import WorkflowInvalid
    from lwtool.source.finding import Severity
    from lwtool.source.loader import LoadFailed, load_path
    from lwtool.validate.run import document_kind, validate_document

    try:
        document = load_path(path)
    except LoadFailed as exc:
        raise WorkflowInvalid(str(path), exc.findings) from None
    findings = validate_document(document)
    if document_kind(document) != PIPELINE_KIND or any(
            f.severity is Severity.ERROR for f in findings):
        raise WorkflowInvalid(document.path, findings)
    value = document.value
    folder = Path(path).parent
    settings = value.get("orchestrator") or {}
    here = (*chain, Path(path).resolve())
    return Pipeline(str(value["id"]),
                    tuple(_entry(folder / str(p), here) for p in value["workflows"]),
                    settings["model"], str(settings.get("system") or ""),
                    tuple(str(s) for s in settings.get("skills") or ()),
                    int(settings.get("maxConcurrentSubRuns", DEFAULT_MAX_CONCURRENT_SUB_RUNS)),
                    str(value.get("description") or ""), folder,
                    int(settings.get("maxSubRuns", DEFAULT_MAX_SUB_RUNS)),
                    settings.get("harness"),
                    int(settings.get("maxDepth", DEFAULT_MAX_DEPTH)))


def _entry(path: Path, chain: tuple[Path, ...]) -> Available:
    """A `workflows:` entry: a definition, or a nested pipeline (loaded with it)."""
    from lwtool.canonical.digest import workflow_version_id
    from lwtool.source.loader import LoadFailed, load_path

    try:
        kind = load_path(path).value.get("kind")
    except (LoadFailed, OSError, AttributeError):
        kind = None  # `available` says what is wrong with it
    if kind != PIPELINE_KIND:
        return available(path)
    nested = load_pipeline(path, chain)
    document = load_path(path).value
    return Available({"id": nested.id, "description": nested.description},
                     path.parent, workflow_version_id(document), nested)
