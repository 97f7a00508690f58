"""The offline model as a planner: a deterministic draft from the request alone, so
`lwtool plan --offline` (and a definition's run) works with no provider and no key.

The draft is the smallest workflow that does what the request asks within what the
definition grants: one `ai.generate` step on the definition's first model slot, told
the goal, the input and the declared tools, answering in the definition's output
schema (`mode: object` for an object schema, `json` for another, `text` without
one). It is submitted through `submit_workflow` like any planner's draft, so the
validator checks it, the grant bounds it and the version is locked the same way; the
offline model then answers each step of the run with schema-valid data. Declared
tools are named in the prompt, not called: calling a tool needs arguments only a
real planner can choose.
"""

from __future__ import annotations

import json
from typing import Any

from lwtool.calls.scripted import ScriptedModel
from lwtool.planner.prompt import SUBMIT_TOOL
from lwtool.planner.request import OrchestrationRequest, RequestInvalid

API_VERSION = "littleworkflow.dev/v0.1"


def offline_draft(request: OrchestrationRequest) -> dict[str, Any]:
    """The deterministic draft for `request` (RequestInvalid without a model slot)."""
    if not request.model_slots:
        raise RequestInvalid("runtime_config_error", "the offline planner drafts one "
                             "ai.generate step and needs a model slot in the definition's "
                             "models")
    slot = str(request.model_slots[0]["id"])
    definition = request.definition
    schema = (request.output or {}).get("schema")
    if isinstance(schema, dict) and schema.get("type") == "object":
        output: dict[str, Any] = {"mode": "object", "schema": schema}
    elif isinstance(schema, dict):
        output = {"mode": "json", "schema": schema}
    else:
        output = {"mode": "text"}
    tools = ", ".join(t["name"] for t in request.tools) or "none"
    goal = str(definition.get("description") or definition.get("id"))
    draft: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": "Workflow",
        "metadata": {"name": str(definition["id"]), "version": "0.1.0",
                     "description": f"offline draft: {goal}"[:200]},
        "permissions": {"models": [slot]},
        "steps": [{"id": "answer", "uses": "ai.generate",
                   "with": {"model": slot,
                            "prompt": f"{goal}\nInput: {{{{ input }}}}\nTools: {tools}"},
                   "output": output}],
    }
    input_schema = (definition.get("input") or {}).get("schema")
    if isinstance(input_schema, dict):
        draft["input"] = {"schema": input_schema}
    if isinstance(schema, dict):
        draft["output"] = {"schema": schema}
    return draft


def offline_planner(request: OrchestrationRequest) -> ScriptedModel:
    """A planner model that submits the offline draft, then says it is done."""
    draft = offline_draft(request)
    return ScriptedModel([{"toolCalls": [{"name": SUBMIT_TOOL, "arguments": draft}]},
                          f"Submitted {json.dumps(draft['metadata']['name'])}."],
                         name="offline")
