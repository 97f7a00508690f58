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
import functools
import hashlib
import inspect
import json
import re
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lwtool.calls.model_calls import recorded_model_call
from lwtool.calls.models import OutputRequest
from lwtool.calls.scripted import ScriptedModel
from lwtool.calls.tool_calls import ToolCallFailed, call_tool, refuse_call
from lwtool.record.errors import StepFailure, WaitingForInput
from lwtool.record.run_state import SESSION_USAGE
from lwtool.tools import Tool, ToolRegistry

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


def tool_fingerprint(tool: Tool) -> str:
    """What a manifest pins of a tool: its name, description, schemas and code (a
    declared `__lwtool_version__` on the callable stands for its code when given)."""
    fn = tool.fn
    code = getattr(fn, "__lwtool_version__", None)
    if code is None:
        bound = ""
        while isinstance(fn, functools.partial):  # the function, and what is bound to it
            bound += repr((fn.args, sorted(fn.keywords.items())))
            fn = fn.func
        body = getattr(fn, "__code__", None) or getattr(type(fn).__call__, "__code__", None)
        code = (code_digest(body) if body is not None else _ADDRESS.sub("", repr(fn))) + \
            _ADDRESS.sub("", bound)
    material = json.dumps([tool.name, tool.description, tool_schema(tool),
                           tool.output_schema if isinstance(tool.output_schema, dict) else None,
                           str(code)], sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(material.encode()).hexdigest()


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # differs in every process


def code_digest(code: types.CodeType) -> str:
    """A digest of a code object that is the same in every process: nested code objects
    (inner functions, comprehensions) are digested in turn, never shown by address."""
    consts = [code_digest(c) if isinstance(c, types.CodeType) else repr(c)
              for c in code.co_consts]
    material = repr((code.co_code, consts, code.co_names))
    return hashlib.sha256(material.encode()).hexdigest()


async def run_agent(run: Any, path: str, model: str | ScriptedModel,
                    messages: list[dict[str, Any]], tools: ToolRegistry, *,
                    max_turns: int = DEFAULT_MAX_TURNS,
                    timeout: float | None = None,
                    finish: Callable[[str, Any], bool] | None = None) -> AgentResult:
    """Drive the conversation `messages` to a final answer. `run` is the recorder (a
    RunState): its journal, `note`, `record`, world and tool threads. `finish(name,
    result)` is asked of every tool result in order (replayed ones too): True ends the
    session with that result (a planner's accepted draft), and it may raise StepFailure
    to fail the session (revisions exhausted)."""
    specs = tool_specs(tools)
    result = AgentResult("", list(messages), 0)
    logged = 0  # messages already in an earlier turn's harness.model.called
    for turn in range(max_turns):
        reply = await recorded_model_call(run, path, turn, model, result.messages, _TEXT, "",
                                          _NO_FORMAT, timeout, specs, since=logged)
        logged = len(result.messages)
        result.turns = turn + 1
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
            result.text = text
            return result
        settled = await asyncio.gather(*(
            _answer(run, path, turn, n, call, tools) for n, call in enumerate(calls)),
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
    raise StepFailure("step_failed", f"the session reached its turn limit ({max_turns} "
                      "turns) without a final answer", path)


async def _answer(run: Any, path: str, turn: int, n: int, call: dict[str, Any],
                  tools: ToolRegistry) -> tuple[Any, str]:
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
        value = await call_tool(run, path, tool, args, "model", call_id, turn)
    except ToolCallFailed as exc:
        value = {"error": exc.message}
    return value, _cut(json.dumps(value, ensure_ascii=False))


def _cut(text: str) -> str:
    if len(text) <= MAX_RESULT_CHARS:
        return text
    return (text[:MAX_RESULT_CHARS] + f"… [cut: the result has {len(text):,} characters; "
            f"the first {MAX_RESULT_CHARS:,} are shown]")
