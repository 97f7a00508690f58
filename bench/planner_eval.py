"""Planner evaluation: how often does a planner model's first LWIR draft validate, and
after 1, 2, 3 repairs? With tokens and cost per plan.

Twelve definitions, from a one-step summary to parallel reviews and decision loops,
are planned by each model given with `--models` (litellm model strings; a provider key
in the environment), each in a fresh local world; nothing runs but the planner.

    .venv/bin/python bench/planner_eval.py --models openai/gpt-4o-mini,anthropic/claude-sonnet-4-5
    .venv/bin/python bench/planner_eval.py --models scripted   # offline: a scripted planner

`scripted` is a deterministic planner (a chain over the declared tools, then a model
step; its first draft leaves a model slot out of `permissions` every other case, so the
repair path is exercised). It is what the tests run; it measures the harness, not a model.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lwtool.calls.offline import value_for  # noqa: E402
from lwtool.calls.scripted import ScriptedModel  # noqa: E402
from lwtool.planner.compile_loop import plan_workflow  # noqa: E402
from lwtool.record.errors import RunFailedError  # noqa: E402
from lwtool.record.report import usage_report  # noqa: E402
from lwtool.tools import ToolRegistry  # noqa: E402
from lwtool.world.local import LocalWorld  # noqa: E402

OBJ = {"type": "object"}
TEXT = {"type": "string"}
TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "creditScore": ("Credit score (300-850) of an applicant by name.",
                    {"type": "object", "required": ["applicant"],
                     "properties": {"applicant": TEXT}}),
    "search": ("Search the knowledge base; returns [{id, title}].",
               {"type": "object", "required": ["query"], "properties": {"query": TEXT}}),
    "fetch": ("Fetch a document's text by id.",
              {"type": "object", "required": ["id"], "properties": {"id": TEXT}}),
    "checkText": ("Check a text; returns {ok, problems[]}.",
                  {"type": "object", "required": ["text"], "properties": {"text": TEXT}}),
    "publish": ("Publish a text; returns {url}.",
                {"type": "object", "required": ["text"], "properties": {"text": TEXT}}),
    "createTicket": ("Open a support ticket; returns {ticketId}.",
                     {"type": "object", "required": ["summary", "queue"],
                      "properties": {"summary": TEXT, "queue": TEXT}}),
    "refund": ("Refund an order; returns {refundId}.",
               {"type": "object", "required": ["orderId"], "properties": {"orderId": TEXT}}),
}


def _definition(name: str, description: str, input_schema: dict[str, Any],
                output: dict[str, Any], tools: list[str], revisions: int = 3) -> dict[str, Any]:
    return {"apiVersion": "littleworkflow.dev/v0.1", "kind": "WorkflowDefinition", "id": name,
            "description": description, "input": {"schema": input_schema},
            "output": {"schema": output},
            "models": [{"id": "writer", "model": "offline",
                        "description": "A capable general model."}],
            "tools": tools, "planner": {"model": "planner", "maxWorkflowRevisions": revisions}}


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "required": sorted(properties), "properties": properties}


CASES = [
    _definition("summarize", "Summarize a text in two sentences.", _object(text=TEXT), TEXT, []),
    _definition("classify-ticket", "Classify a support ticket as billing, bug or other.",
                _object(ticket=TEXT), {"enum": ["billing", "bug", "other"]}, []),
    _definition("extract-invoice", "Extract vendor, total and currency from an invoice text.",
                _object(text=TEXT), _object(vendor=TEXT, total={"type": "number"},
                                            currency=TEXT), []),
    _definition("loan-summary", "Summarize a loan application with the applicant's credit "
                "score.", _object(applicant=TEXT), TEXT, ["creditScore"]),
    _definition("research", "Search the knowledge base for a question, read the best hit and "
                "answer from it.", _object(question=TEXT), TEXT, ["search", "fetch"]),
    _definition("score-candidates", "Score each candidate (up to 20) against a job "
                "requirement, in parallel, returning a score and a reason for each.",
                _object(candidates={"type": "array", "items": _object(id=TEXT, cv=TEXT)},
                        requirement=TEXT), {"type": "array"}, []),
    _definition("refine-loop", "Draft a product description, check it with checkText and "
                "redraft until it passes (at most 4 rounds), then publish it.",
                _object(product=TEXT), OBJ, ["checkText", "publish"]),
    _definition("translate-check", "Translate a text to French; if checkText rejects it, "
                "translate again once more with the problems in the prompt.",
                _object(text=TEXT), TEXT, ["checkText"]),
    _definition("review-documents", "Fetch up to 10 documents by id in parallel, summarize "
                "each, then merge the summaries into one brief.",
                _object(ids={"type": "array", "items": TEXT}), TEXT, ["fetch"]),
    _definition("triage", "Classify a customer message; refunds go to refund with the order "
                "id, everything else becomes a ticket in the right queue.",
                _object(message=TEXT, orderId=TEXT), OBJ, ["refund", "createTicket"]),
    _definition("compare-answers", "Answer a question twice with different instructions, "
                "then pick the better answer with reasons.", _object(question=TEXT),
                _object(answer=TEXT, reason=TEXT), []),
    _definition("release-notes", "Search for changes of a release, fetch each of up to 5 in "
                "parallel, write release notes, check them and publish.",
                _object(release=TEXT), OBJ, ["search", "fetch", "checkText", "publish"]),
]


def _registry() -> ToolRegistry:
    tools = ToolRegistry()
    for name, (description, schema) in TOOLS.items():
        tools.register(name, lambda args: None, description, input_schema=schema)
    return tools


def scripted_planner(definition: dict[str, Any], flawed: bool) -> ScriptedModel:
    """A deterministic planner: one tool.call per declared tool, then a model step."""
    steps: list[dict[str, Any]] = []
    for name in definition["tools"]:
        required = TOOLS[name][1]["required"]
        steps.append({"id": f"call-{name.lower()}", "uses": "tool.call",
                      "with": {"tool": name, "args": {k: "{{ input }}" for k in required}}})
    steps.append({"id": "answer", "uses": "ai.generate",
                  "with": {"model": "writer", "prompt": "Do this: " + definition["description"]
                           + " Input: {{ input }}"},
                  "output": {"mode": "object", "schema": definition["output"]["schema"]}
                  if definition["output"]["schema"].get("type") == "object"
                  else {"mode": "text"}})
    good = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": definition["id"], "version": "0.1.0"},
            "input": definition["input"],
            "permissions": {"tools": list(definition["tools"]), "models": ["writer"]},
            "steps": steps}
    first = json.loads(json.dumps(good))
    if flawed:
        first["permissions"]["models"] = []
    submit = [{"toolCalls": [{"name": "submit_workflow", "arguments": d}]}
              for d in ([first, good] if flawed else [good])]
    return ScriptedModel([*submit, "done"])


async def evaluate(model_name: str, definition: dict[str, Any], index: int,
                   folder: Path) -> dict[str, Any]:
    world = LocalWorld(folder / f"{model_name.replace('/', '_')}-{definition['id']}")
    model: Any = scripted_planner(definition, index % 2 == 1) if model_name == "scripted" \
        else model_name
    row: dict[str, Any] = {"model": model_name, "definition": definition["id"]}
    try:
        sample = value_for(definition["input"]["schema"], definition["id"])  # fits the schema
        result = await plan_workflow(world, definition, sample, _registry(), model,
                                     run_id="plan", progress=None)
        row.update(valid=True, drafts=result.drafts)
    except RunFailedError as failure:
        row.update(valid=False, drafts=None, cause=failure.cause_code)
    usage = usage_report(world.events("plan"))["run"]
    row.update(inputTokens=usage["inputTokens"], outputTokens=usage["outputTokens"],
               costUsd=usage["costUsd"])
    world.close()
    return row


def summarize(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]

        def within(repairs: int, rows: list[dict[str, Any]] = mine) -> str:
            hits = sum(1 for r in rows if r["valid"] and r["drafts"] <= repairs + 1)
            return f"{hits}/{len(rows)} ({100 * hits / len(rows):.0f}%)"

        tokens = [r["inputTokens"] + r["outputTokens"] for r in mine]
        costs = [r["costUsd"] for r in mine if r["costUsd"] is not None]
        cost = f"${sum(costs):.4f} total" if costs else "unpriced"
        lines.append(f"{model}: first draft valid {within(0)}; after 1 repair {within(1)}, "
                     f"2 {within(2)}, 3 {within(3)}; tokens/plan median "
                     f"{statistics.median(tokens):,.0f}; {cost}")
    return lines


async def main(models: list[str]) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as name:
        for model in models:
            for index, definition in enumerate(CASES):
                row = await evaluate(model, definition, index, Path(name))
                rows.append(row)
                print(f"{row['model']:<28} {row['definition']:<18} "
                      f"{'valid' if row['valid'] else row.get('cause', 'invalid'):<28} "
                      f"drafts={row['drafts']} tokens={row['inputTokens']}+"
                      f"{row['outputTokens']} cost={row['costUsd']}")
    for line in summarize(rows):
        print(line)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="scripted",
                        help="comma-separated litellm model strings, or 'scripted'")
    asyncio.run(main([m.strip() for m in parser.parse_args().models.split(",") if m.strip()]))
