"""The agent loop: a model in a tool-using loop with a persistent conversation.

Each turn asks the model (native tool calling through litellm; the registry's tools as
OpenAI-style function tools) and runs the tool calls it made, concurrently when it made
several, feeding their results back; a reply with no tool calls ends the session with
its text. Every model call and tool call is recorded (`harness.model.*`,
`harness.tool_call.*` with `caller: "model"`), so a resumed session fast-forwards
through committed turns without calling anything again.

Misbehaving models are contained: arguments that are not a JSON object, an unknown
tool, or a tool that raises become a failed tool call (recorded, and returned to the
model as an error it can act on); a tool result is cut to MAX_RESULT_CHARS before the
model sees it (the whole result stays in the log); a session that never stops fails
at its turn limit with a clear message.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lwtool.calls.model_calls import recorded_model_call
from lwtool.calls.models import OutputRequest
from lwtool.calls.scripted import ScriptedModel
from lwtool.calls.tool_calls import ToolCallFailed, call_tool, refuse_call
from lwtool.record.errors import CauseCode, StepFailure, WaitingForInput
from lwtool.record.run_state import SESSION_USAGE
from lwtool.tools import Tool, ToolContext, ToolRegistry

DEFAULT_MAX_TURNS = 20
MAX_RESULT_CHARS = 64 * 1024
_TEXT = {"mode": "text"}
_NO_FORMAT = OutputRequest(None, native=False)


@dataclass
class AgentResult:
    text: str
    messages: list[dict[str, Any]]
    turns: int
    tool_calls: int = 0
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SESSION_USAGE, 0))
    final: Any = None  # the result of the tool call that ended the session, if one did
    finished_by_tool: bool = False


def tool_schema(tool: Tool) -> dict[str, Any]:
    """A tool's input JSON Schema: given as JSON Schema, or a pydantic model class
    (converted with `model_json_schema()`), else any object."""
    schema = tool.input_schema
    if inspect.isclass(schema) and hasattr(schema, "model_json_schema"):
        schema = schema.model_json_schema()
    return schema if isinstance(schema, dict) else {"type": "object"}


def tool_specs(tools: ToolRegistry) -> list[dict[str, Any]]:
    """The registry's tools as OpenAI-style function tools, each under a name every
    provider accepts (provider_names)."""
    named = provider_names(tools)
    return [{"type": "function", "function": {
        "name": named[name], "description": tools.tools[name].description,
        "parameters": tool_schema(tools.tools[name])}} for name in tools.names()]


_PROVIDER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def provider_names(tools: ToolRegistry) -> dict[str, str]:
    """tool name -> the name a model is given: the same where providers accept it
    (letters, digits, `_`, `-`; at most 64), else `.` as `__` and any other character
    as `_` (an MCP tool `time.get_current_time` is `time__get_current_time`), shortened
    with a hash past 64, and one name never given to two tools."""
    out: dict[str, str] = {}
    taken = set(tools.tools)
    for name in tools.names():
        if _PROVIDER_NAME.fullmatch(name):
            out[name] = name
            continue
        safe = re.sub(r"[^A-Za-z0-9_-]", "_", name.replace(".", "__"))
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        if len(safe) > 64 or safe in taken:
            safe = f"{safe[:55]}_{digest}"
        out[name] = safe
        taken.add(safe)
    return out


def tool_named(tools: ToolRegistry, name: str) -> Tool | None:
    """The tool a model's call names: by its own name, or the one it was given."""
    found = tools.get(name)
    if found is not None:
        return found
    real = {given: own for own, given in provider_names(tools).items()}.get(name)
    return tools.get(real) if real is not None else None


@dataclass(frozen=True)
class AnswerCheck:
    """How an agent step holds its final answer to the output contract: `problem(text)`
    says why a reply does not fit (None: it fits); up to `repairs` replies that do not
    fit are sent back to the model (on `repair_model` when the repair escalates), each
    repair turn beside the turn limit."""

    problem: Callable[[str], str | None]
    repairs: int = 0
    repair_model: str | ScriptedModel | None = None


async def run_agent(run: Any, path: str, model: str | ScriptedModel,
                    messages: list[dict[str, Any]], tools: ToolRegistry, *,
                    max_turns: int = DEFAULT_MAX_TURNS,
                    timeout: float | None = None,
                    finish: Callable[[str, Any], bool] | None = None,
                    context: ToolContext | None = None,
                    answer: AnswerCheck | None = None,
                    mode: dict[str, Any] | None = None,
                    limit_cause: CauseCode = "step_failed") -> AgentResult:
    """Drive the conversation `messages` to a final answer. `run` is the recorder (a
    RunState): its journal, `note`, `record`, world and tool threads. `finish(name,
    result)` is asked of every tool result in order (replayed ones too): True ends the
    session with that result (a planner's accepted draft), and it may raise StepFailure
    to fail the session (revisions exhausted). `context`: what the tools may read (a
    step's granted secrets); `answer`: the final reply's check (an ai.agent step's
    output mode), `mode` what the offline model answers in; `limit_cause`: the cause a
    session that reaches `max_turns` fails with."""
    specs = tool_specs(tools)
    result = AgentResult("", list(messages), 0)
    logged = 0  # messages already in an earlier turn's harness.model.called
    limit, repaired, turn = max_turns, 0, 0
    calls: list[dict[str, Any]] = []
    prompt = str(messages[-1].get("content") or "") if messages else ""  # offline answers it
    while turn < limit:
        reply = await recorded_model_call(run, path, turn, model, result.messages,
                                          mode or _TEXT, prompt, _NO_FORMAT, timeout, specs,
                                          since=logged)
        logged = len(result.messages)
        this, turn = turn, turn + 1
        result.turns = turn
        response = reply["response"]
        for key in SESSION_USAGE:
            result.usage[key] += int((response.get("usage") or {}).get(key, 0))
        calls = response.get("toolCalls") or []
        text = str(response.get("text") or "")
        assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            assistant["tool_calls"] = [{"id": c["id"], "type": "function", "function": {
                "name": c["name"], "arguments": c["arguments"]}} for c in calls]
        result.messages.append(assistant)
        if not calls:
            problem = answer.problem(text) if answer is not None else None
            if problem is None or answer is None or repaired >= answer.repairs:
                result.text = text
                return result
            repaired += 1
            limit += 1  # a repair turn is not one of the agent's own turns
            if answer.repair_model is not None:
                model = answer.repair_model
            result.messages.append({"role": "user", "content": f"That reply does not fit: "
                                    f"{problem}. Reply again, correctly."})
            continue
        settled = await asyncio.gather(*(
            _answer(run, path, this, n, call, tools, context)
            for n, call in enumerate(calls)),
            return_exceptions=True)  # a call that waits must not orphan the others
        waits = [r for s in settled if isinstance(s, WaitingForInput) for r in s.requests]
        if waits:
            raise WaitingForInput(waits)
        for outcome in settled:
            if isinstance(outcome, BaseException):
                raise outcome
        answers = [a for a in settled if not isinstance(a, BaseException)]
        result.tool_calls += len(calls)
        result.messages.extend({"role": "tool", "tool_call_id": call["id"], "content": text}
                               for call, (_, text) in zip(calls, answers, strict=True))
        for call, (value, _) in zip(calls, answers, strict=True):
            if finish is not None and finish(str(call.get("name")), value):
                result.final, result.finished_by_tool = value, True
                return result
    asked = sorted({str(c.get("name")) for c in calls})
    raise StepFailure(limit_cause, f"the session reached its turn limit ({max_turns} "
                      "turns) without a final answer" +
                      (f": its last turn still called {', '.join(asked)}" if asked else ""),
                      path)


async def _answer(run: Any, path: str, turn: int, n: int, call: dict[str, Any],
                  tools: ToolRegistry, context: ToolContext | None) -> tuple[Any, str]:
    """One call's result (or `{"error": ...}`), and the tool message the model reads."""
    call_id = f"{path}#{turn}.{n}"
    name, raw = str(call.get("name")), call.get("arguments")
    tool = tool_named(tools, name)
    problem: str | None
    try:
        args = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError as exc:
        args, problem = raw, f"the arguments are not valid JSON ({exc})"
    else:
        problem = None if isinstance(args, dict) else "the arguments must be a JSON object"
    if tool is None:
        known = ", ".join(tools.names()) or "none"
        problem = f"there is no tool '{name}' (tools: {known})"
    try:
        if problem is not None:
            await refuse_call(run, path, call_id, "model", name, args, problem, turn)
        assert tool is not None
        value = await call_tool(run, path, tool, args, "model", call_id, turn, context)
    except ToolCallFailed as exc:
        value = {"error": exc.message}
    return value, _cut(json.dumps(value, ensure_ascii=False))


def _cut(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return (text[:MAX_RESULT_CHARS] + f"… [cut: the result has {len(text):,} characters; "
            f"the first {MAX_RESULT_CHARS:,} are shown]")
