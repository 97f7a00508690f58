"""OrchestrationRequest: what the planner is asked to design, built from a
WorkflowDefinition and a run input. The input is validated against the definition's
input schema; the model slots, the declared tools (description and input schema, never
their code) and the output contract are snapshotted, with the WorkflowDefinitionHash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lwtool.authoring.snapshot import definition_hash, slot_id
from lwtool.calls.agent_loop import tool_schema
from lwtool.planner.grant import Grant
from lwtool.record.errors import CauseCode
from lwtool.tools import ToolRegistry


class RequestInvalid(Exception):
    """The definition cannot be planned with this input or these tools; `cause` is the
    spec's cause code (input_schema_error, runtime_config_error)."""

    def __init__(self, cause: CauseCode, message: str) -> None:
        super().__init__(message)
        self.cause = cause
        self.message = message


@dataclass(frozen=True)
class OrchestrationRequest:
    definition: dict[str, Any]
    definition_hash: str
    input: Any
    model_slots: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    output: dict[str, Any] | None
    outer_loop: dict[str, Any] | None = None

    @property
    def workflow_id(self) -> str:
        return str(self.definition["id"])

    def as_json(self) -> dict[str, Any]:
        grant = Grant.of(self.definition)
        request = {"workflowId": self.workflow_id, "workflowDefinitionHash": self.definition_hash,
                   "goal": self.definition.get("description", ""),
                   "inputSchema": (self.definition.get("input") or {}).get("schema"),
                   "outputSchema": (self.output or {}).get("schema"),
                   "modelSlots": self.model_slots, "tools": self.tools,
                   "maxCodeSandbox": grant.sandbox, "secrets": sorted(grant.secrets),
                   "network": list(grant.network), "input": self.input}
        if self.outer_loop is not None:
            request["outerLoop"] = self.outer_loop
        return request


def build_request(definition: dict[str, Any], run_input: Any, tools: ToolRegistry,
                  outer_loop: dict[str, Any] | None = None,
                  base: Path | None = None) -> OrchestrationRequest:
    """`base`: the definition's folder (its skills are hashed by content from there)."""
    from lwtool.steps.outputs import OutputInvalid, check_schema

    schema = (definition.get("input") or {}).get("schema")
    try:
        check_schema(run_input, schema, "the run input")
    except OutputInvalid as exc:
        raise RequestInvalid("input_schema_error", str(exc)) from None
    declared = list(definition.get("tools") or [])
    missing = [name for name in declared if tools.get(name) is None]
    if missing:
        raise RequestInvalid("runtime_config_error",
                             f"the definition declares tools that are not registered: "
                             f"{', '.join(missing)} (give them with --tools MODULE:ATTR)")
    described = []
    for name in declared:
        tool = tools.tools[name]
        entry: dict[str, Any] = {"name": name, "description": tool.description,
                                 "inputSchema": tool_schema(tool)}
        if isinstance(tool.output_schema, dict):
            entry["outputSchema"] = tool.output_schema
        described.append(entry)
    slots = [{"id": slot_id(m), **({"description": m["description"]}
                                   if m.get("description") else {})}
             for m in definition.get("models") or []]
    return OrchestrationRequest(definition, definition_hash(definition, base), run_input, slots,
                                described, definition.get("output"), outer_loop)
