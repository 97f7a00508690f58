"""The offline model as an orchestrator: real work, deterministically, with no provider
and no key, so `lwtool orchestrate PIPELINE --offline` shows sub-runs, the runs tree,
the report and the inspector on a fresh machine.

Its items are the pipeline input's first list (the input itself when it is a list;
else the input alone, once). Each workflow of the pipeline is planned once, for the
first item, then run for every item as a sub-run, at once (the pipeline's
maxConcurrentSubRuns holds); the answer is the JSON of their outputs by workflow. An
item is given to a workflow as it is when its input schema takes it, else wrapped in
the schema's one property (`3` -> `{"n": 3}`); a workflow whose schema takes neither
gets the whole input once, as a nested pipeline does. With each workflow as a tool of
its own (`create_harness`), each tool is called for each item."""

from __future__ import annotations

import json
from typing import Any

from lwtool.calls.scripted import ScriptedModel
from lwtool.orchestrate.pipeline import Available, Pipeline
from lwtool.orchestrate.subruns import PLAN, RUN, tool_name


def offline_orchestrator(pipeline: Pipeline, run_input: Any, typed: bool) -> ScriptedModel:
    """The scripted model the offline model is as this pipeline's orchestrator."""
    runs = [(workflow, inputs_for(workflow, run_input)) for workflow in pipeline.workflows]
    if typed:
        calls = [{"name": tool_name(w.id), "arguments": item} for w, items in runs
                 for item in items]
        return ScriptedModel([{"toolCalls": calls}, lambda messages: _answer(
            messages, [w.id for w, items in runs for _ in items])], name="offline")
    plans = [{"name": PLAN, "arguments": {"workflowId": w.id, "input": items[0]}}
             for w, items in runs]

    def run_each(messages: list[dict[str, Any]]) -> dict[str, Any]:
        calls = []
        for (_, items), plan in zip(runs, _results(messages), strict=True):
            version = plan.get("workflowVersionId") if isinstance(plan, dict) else None
            if version:  # a plan that failed: its error stays in the log
                calls += [{"name": RUN, "arguments": {"workflowVersionId": version,
                                                      "input": item}} for item in items]
        return {"toolCalls": calls} if calls else {
            "text": "no workflow of the pipeline could be planned"}

    def answer(messages: list[dict[str, Any]]) -> str:
        """The workflow of each run, from the turns before: version -> workflow."""
        turns = [m for m in messages if m.get("role") == "assistant"]
        planned = {str(result.get("workflowVersionId")): args.get("workflowId")
                   for args, result in zip(_arguments(turns[0]), _results(messages, 0),
                                           strict=False) if isinstance(result, dict)}
        return _answer(messages, [str(planned.get(str(args.get("workflowVersionId"))))
                                  for args in _arguments(turns[-1])])

    return ScriptedModel([{"toolCalls": plans}, run_each, answer], name="offline")


def inputs_for(workflow: Available, run_input: Any) -> list[Any]:
    """The inputs one workflow is run on: an item each (see the module's docstring); a
    nested pipeline gets the whole input once (it splits it itself)."""
    from lwtool.steps.outputs import OutputInvalid, check_schema

    if workflow.nested is not None:
        return [run_input]
    schema = (workflow.definition.get("input") or {}).get("schema")
    items = _items(run_input)

    def fits(value: Any) -> bool:
        if not isinstance(schema, dict):
            return True
        try:
            check_schema(value, schema, "the input")
        except OutputInvalid:
            return False
        return True

    if items and all(fits(item) for item in items):
        return items
    names = list((schema or {}).get("properties") or {}) if isinstance(schema, dict) else []
    required = (schema or {}).get("required") or names if isinstance(schema, dict) else []
    if items and len(required) == 1 and all(fits({required[0]: i}) for i in items):
        return [{required[0]: item} for item in items]
    return [run_input]


def _items(run_input: Any) -> list[Any]:
    if isinstance(run_input, list):
        return list(run_input)
    if isinstance(run_input, dict):
        return next((list(v) for v in run_input.values() if isinstance(v, list) and v), [])
    return []


def _results(messages: list[dict[str, Any]], turn: int = -1) -> list[Any]:
    """The tool results answering an assistant turn (the last by default), in call
    order, as JSON values."""
    turns = [n for n, m in enumerate(messages) if m.get("role") == "assistant"]
    start = turns[turn]
    end = next((n for n in turns if n > start), len(messages))
    found = []
    for message in messages[start + 1:end]:
        if message.get("role") == "tool":
            try:
                found.append(json.loads(str(message.get("content") or "")))
            except ValueError:
                found.append(message.get("content"))
    return found


def _arguments(turn: dict[str, Any]) -> list[dict[str, Any]]:
    """The arguments of an assistant turn's tool calls."""
    found = []
    for call in turn.get("tool_calls") or []:
        try:
            value = json.loads((call.get("function") or {}).get("arguments") or "{}")
        except ValueError:
            value = {}
        found.append(value if isinstance(value, dict) else {})
    return found


def _answer(messages: list[dict[str, Any]], workflows: list[str]) -> str:
    """The outputs by workflow, in item order (a failed sub-run: its status and error)."""
    outputs: dict[str, list[Any]] = {}
    for workflow, result in zip(workflows, _results(messages), strict=False):
        outputs.setdefault(workflow, []).append(_output(result))
    return json.dumps(outputs, ensure_ascii=False)


def _output(result: Any) -> Any:
    if not isinstance(result, dict):
        return result
    if "output" in result:  # a workflow tool's own result
        return result["output"]
    if result.get("status") == "completed" and "outputSummary" in result:
        try:
            return json.loads(result["outputSummary"])
        except (TypeError, ValueError):
            return result["outputSummary"]
    return {key: result[key] for key in ("runId", "status", "error") if key in result}
