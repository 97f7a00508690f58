"""WorkflowDefinitions in Python: `define_workflow(...)` gives the same document a
`*.definition.yaml` holds (schemas may be pydantic models; tools may be given as the
registered callables or their names).

    definition = define_workflow(
        "loan", description="Summarize a loan application.", input=Applicant,
        output=str, models=[model_slot("gpt-4o-mini", "openai/gpt-4o-mini")],
        tools=["creditScore"], planner=planner(model="openai/gpt-4o", max_revisions=2),
        memory=memory(workflow="rw", org="ro"))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lwtool.authoring.builders import API_VERSION, Workflow
from lwtool.authoring.schemas import to_schema


def model_slot(slot_id: str, model: str, description: str | None = None) -> dict[str, Any]:
    return {"id": slot_id, "model": model, **({"description": description}
                                              if description else {})}


def model(name: str, *, id: str | None = None,  # noqa: A002 - the slot's `id`, as LWIR
          description: str | None = None) -> dict[str, Any]:
    """The spec's `model(...)`: a model slot for `define_workflow(models=[...])` from a
    litellm model string; its id defaults to the model's own name
    (`model("openai/gpt-4o-mini")` is the slot `gpt-4o-mini`)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"model(...) takes a litellm model string, not {name!r}")
    return model_slot(id or name.rsplit("/", 1)[-1], name, description)


def planner(*, model: str | None = None, system: str | None = None,
            skills: Iterable[str] = (), plan: str | None = None,
            max_revisions: int | None = None, max_outer_cycles: int | None = None,
            supervise: str | None = None, harness: str | None = None,
            max_code_sandbox: dict[str, str] | None = None) -> dict[str, Any]:
    """`max_code_sandbox`: the widest code.run sandbox a plan may ask for, e.g.
    `{"fs": "read"}` (default: network, env and fs all deny)."""
    settings = {"model": model, "system": system, "skills": list(skills) or None,
                "plan": plan, "maxWorkflowRevisions": max_revisions,
                "maxOuterCycles": max_outer_cycles, "supervise": supervise,
                "harness": harness, "maxCodeSandbox": max_code_sandbox or None}
    return {k: v for k, v in settings.items() if v is not None}


def skill(source: str) -> str:
    """A skill source for `planner(skills=...)` / `worker(skills=...)`: a local folder
    (or its SKILL.md) or `git+<scheme>://<repo>[@<ref>][#subdirectory=<path>]`, checked
    as `lwtool validate` checks it (ValueError saying why, before anything runs)."""
    from lwtool.source.skill_source import source_problem

    problem = source_problem(source) if isinstance(source, str) else "not a string"
    if problem:
        raise ValueError(f"skill source {source!r} cannot be used: {problem}")
    return source


def worker(*, harness: str | None = None, system: str | None = None,
           skills: Iterable[str] = ()) -> dict[str, Any]:
    settings = {"harness": harness, "system": system, "skills": list(skills) or None}
    return {k: v for k, v in settings.items() if v is not None}


def memory(*, workflow: str = "rw", org: str = "ro",
           attach: Iterable[str] = ()) -> dict[str, Any]:
    settings: dict[str, Any] = {"workflow": workflow, "org": org}
    if attach:
        settings["attach"] = list(attach)
    return settings


@dataclass
class Definition:
    """A WorkflowDefinition document; `folder` is where its relative paths (skills, a
    fixed plan) are read from (None: the current folder)."""

    value: dict[str, Any]
    folder: Path | None = None

    def document(self) -> dict[str, Any]:
        return self.value

    @property
    def workflow_definition_hash(self) -> str:
        """Its WorkflowDefinitionHash (`sha256:...`), as `lwtool hash` gives a
        definition file's (skills read relative to `folder`)."""
        from lwtool.authoring.snapshot import digest_of

        return digest_of("WorkflowDefinition", self.value, self.folder)


def define_workflow(workflow_id: str, *, planner: dict[str, Any], description: str | None = None,
                    input: Any = None, output: Any = None,
                    models: Iterable[dict[str, Any]] = (), tools: Iterable[Any] = (),
                    worker: dict[str, Any] | None = None,
                    memory: dict[str, Any] | None = None) -> Definition:
    value: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "WorkflowDefinition",
                             "id": workflow_id}
    if description:
        value["description"] = description
    if input is not None:
        value["input"] = {"schema": to_schema(input)}
    if output is not None:
        value["output"] = {"schema": to_schema(output)}
    if models:
        value["models"] = list(models)
    names = [t if isinstance(t, str) else getattr(t, "__name__", str(t)) for t in tools]
    if names:
        value["tools"] = names
    value["planner"] = dict(planner)
    if worker:
        value["worker"] = dict(worker)
    if memory:
        value["memory"] = dict(memory)
    return Definition(value)


def document_of(value: Any) -> dict[str, Any]:
    """The document a generator attribute stands for: a Workflow, a Definition, a dict,
    or a function returning one of them."""
    if callable(value) and not isinstance(value, (Workflow, Definition)):
        value = value()
    if isinstance(value, (Workflow, Definition)):
        return value.document()
    if isinstance(value, dict):
        return value
    raise TypeError(f"a generator gives a Workflow, a Definition or a dict, not "
                    f"{type(value).__name__}")
