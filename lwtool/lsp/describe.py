"""What hover says: each step type, each expression root, and a step (what it
receives as input, what it needs, its visits, output mode and routes)."""

from __future__ import annotations

import json
from typing import Any

from lwtool.validate.context import StepInfo
from lwtool.validate.flow import decision_targets

STEP_TYPE_DOCS = {
    "ai.generate": "One model call on a model slot; the reply is checked against the output "
                   "mode (text, object, array, choice, json). No tools are offered.",
    "ai.agent": "lwtool: a model that calls tools until it is done: the agent loop on a "
                "model slot, offered only `with.tools` (each in permissions.tools), at "
                "most `with.maxTurns` turns (default 10). Each turn and tool call is "
                "recorded; the final reply is checked against the output mode.",
    "tool.call": "Calls one registered tool directly with the step input.",
    "code.run": "Runs pinned TypeScript source in a sandbox enforcing the step's sandbox "
                "policy; `tools` proxies registered tools (caller: code).",
    "decision": "Routes to the first case whose `when` is truthy, else `default`; `end` "
                "ends the scope. Records only `{chosen}`.",
    "parallel": "Runs its `steps` once per item (bounded by maxBranches and "
                "maxConcurrency) and fans the branch outputs in, in input or itemKey order.",
    "human.input": "lwtool: waits for a person. The run stops with status `waiting` and "
                   "exit code 3; `lwtool respond RUN STEP_PATH --input FILE` answers (checked "
                   "against `with.schema`), and the answer is the step's output.",
    "workflow.invoke": "lwtool: runs another workflow (`with.workflow`: a file relative to "
                       "this one, locked into this workflow's version, or a version id) as "
                       "a child run on `with.input`; the child's output is the step's.",
    "map": "lwtool: runs `with.workflow` over `with.items` in fixed shards (`batch`), each "
           "a child run, at most `maxConcurrency` at once, within `toleratedFailure`; "
           "the shards' outputs (or their tree `reduce`) are the step's.",
}


ROOT_DOCS = {
    "input": "**input**: the workflow input (checked against `input.schema`).",
    "item": "**item**: the current element of the enclosing parallel step's `items`.",
    "workflow": "**workflow**: `name`, `version`, `runId`, `versionId` of this run.",
    "step": "**step**: `id`, `path`, `visit` and `attempt` of the step being run.",
    "steps": "**steps**: `steps.<id>.output`, `.lastOutput` or `.allVisits`.",
}


def describe_input(info: StepInfo, workflow_input: Any = None) -> str:
    """What a step receives as its input (the runtime's rule: `input`, else
    `with.args`, else the current item inside a parallel body, else the run input)."""
    with_ = info.step.get("with")
    for key, value in (("input", info.step.get("input")),
                       ("with.args", with_.get("args") if isinstance(with_, dict) else None)):
        if value is not None:
            text = json.dumps(value, ensure_ascii=False)
            text = text if len(text) <= 160 else text[:157] + "..."
            return f"input: its `{key}`, `{text}` (`{{{{ }}}}` filled in when it runs)"
    if info.parent is not None:
        parent_with = info.parent.step.get("with")
        items = parent_with.get("items") if isinstance(parent_with, dict) else None
        return (f"input: the current item of `{info.parent.id}` (one of `{items}`)"
                if isinstance(items, str) else f"input: the current item of `{info.parent.id}`")
    if isinstance(workflow_input, dict):
        properties = workflow_input.get("properties")
        props = sorted(properties) if isinstance(properties, dict) else []
        required = [r for r in workflow_input.get("required") or [] if isinstance(r, str)]
        shape = f"an object with {', '.join(props)}" if props else \
            f"a {workflow_input.get('type', 'JSON value')}"
        need = f" (required: {', '.join(required)})" if required else ""
        return f"input: the workflow input, {shape}{need}"
    return "input: the workflow input"


def describe_step(info: StepInfo, workflow_input: Any = None) -> str:
    lines = [f"**step `{info.id}`** ({info.uses or '?'})"]
    if info.uses != "parallel":
        lines.append(describe_input(info, workflow_input))
    if info.needs:
        lines.append("needs: " + ", ".join(info.needs))
    if info.max_visits > 1:
        lines.append(f"maxVisits: {info.max_visits} (read it with lastOutput / allVisits)")
    output = info.step.get("output")
    if isinstance(output, dict) and output.get("mode"):
        lines.append(f"output: {output['mode']}")
    targets = [t for t, _ in decision_targets(info)]
    if targets:
        lines.append("routes to: " + ", ".join(targets))
    description = info.step.get("description")
    if isinstance(description, str):
        lines.append(description)
    return "\n\n".join(lines)
