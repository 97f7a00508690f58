"""The built-in offline model: deterministic, no network, no key.

It answers any output mode with schema-valid data derived from the prompt, so that
examples and tests run end to end on a fresh machine. It is chosen explicitly (model
string `offline`, e.g. through `--models`), never in place of a real provider.
Booleans answer true, so review loops that wait for `passed` end on their first round.
Offered tools (an ai.agent step), it calls each once, one a turn, then answers
(`offline_turn`): a two-tool agent takes three turns, every time.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

OFFLINE_MODEL = "offline"


def _words(prompt: str) -> str:
    return " ".join(prompt.split())


def _digest(prompt: str) -> int:
    return int(hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:12], 16)


def _string(prompt: str, schema: dict[str, Any]) -> str:
    text = "offline: " + _words(prompt)[:60]
    low = schema.get("minLength", 0)
    high = schema.get("maxLength")
    if len(text) < low:
        text = text + "." * (low - len(text))
    if isinstance(high, int):
        text = text[:high]
    return text


def value_for(schema: Any, prompt: str, depth: int = 0) -> Any:
    """A value valid against a schema of LWIR's subset, derived from the prompt."""
    if schema is True or not isinstance(schema, dict):
        return _string(prompt, {})
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][_digest(prompt) % len(schema["enum"])]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return value_for(schema[key][0], prompt, depth + 1)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        names = list(properties) if depth < 6 else list(schema.get("required", []))
        return {name: value_for(properties.get(name, True), f"{prompt}/{name}", depth + 1)
                for name in names}
    if kind == "array":
        count = max(1, schema.get("minItems", 1))
        if "maxItems" in schema:
            count = min(count, schema["maxItems"])
        return [value_for(schema.get("items", True), f"{prompt}[{i}]", depth + 1)
                for i in range(count)]
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        low = schema.get("minimum", 0)
        high = schema.get("maximum", low + 100)
        value = low + _digest(prompt) % (int(high - low) + 1) if high >= low else low
        return int(value) if kind == "integer" else float(value)
    if kind == "null":
        return None
    return _string(prompt, schema)


def offline_reply(prompt: str, mode: dict[str, Any]) -> str:
    """The model's raw text for an output mode (JSON text for structured modes)."""
    kind = mode.get("mode", "text")
    if kind == "text":
        return "offline answer: " + _words(prompt)[:200]
    if kind == "choice":
        values = mode.get("values") or ["yes"]
        return str(values[_digest(prompt) % len(values)])
    schema = mode.get("schema", {"type": "object"} if kind == "object" else
                      {"type": "array"} if kind == "array" else True)
    return json.dumps(value_for(schema, prompt))


def offline_turn(messages: list[dict[str, Any]], mode: dict[str, Any], prompt: str,
                 tools: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """One turn of the offline model offered `tools` (OpenAI-style function tools): a
    call of the first tool it has not called yet in this conversation, its arguments
    made from the tool's input schema and the prompt; once every tool was called, the
    answer in `mode`, made from what the tools returned and the prompt."""
    called = {call.get("function", {}).get("name") for m in messages
              if m.get("role") == "assistant" for call in m.get("tool_calls") or []}
    for spec in tools:
        function = spec.get("function") or {}
        if function.get("name") not in called:
            args = value_for(function.get("parameters") or {"type": "object"}, prompt)
            turn = sum(1 for m in messages if m.get("role") == "assistant")
            return "", [{"id": f"offline_{turn}", "name": str(function.get("name")),
                         "arguments": json.dumps(args if isinstance(args, dict) else {})}]
    results = " ".join(str(m.get("content")) for m in messages if m.get("role") == "tool")
    return offline_reply(f"{results} | {prompt}" if results else prompt, mode), []


def offline_usage(prompt: str, reply: str) -> dict[str, int]:
    return {"inputTokens": max(1, len(prompt) // 4), "outputTokens": max(1, len(reply) // 4),
            "cachedInputTokens": 0, "reasoningTokens": 0}
