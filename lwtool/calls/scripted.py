"""A scripted model: replies given in advance, for tests, benchmarks and dry runs of a
harness session without a provider. Each reply is text, or a dict with `text` and/or
`toolCalls` (`[{"name", "arguments"}]`; arguments as a JSON string or a value, and an
optional `id`). A reply may also be a callable taking the messages so far, for replies
that depend on what the tools returned. Running out of replies is an error.

The reply for a call is chosen by the conversation, not by how often this object was
called: the N-th reply answers a conversation holding N-1 assistant messages. So a
resumed session, which is handed its committed turns from the log, asks for the same
reply it asked for before the process died."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Reply = str | dict[str, Any] | Callable[[list[dict[str, Any]]], Any]


class ScriptExhausted(Exception):
    pass


@dataclass
class ScriptedModel:
    replies: list[Reply]
    name: str = "scripted"
    calls: list[list[dict[str, Any]]] = field(default_factory=list)  # messages per call

    def next(self, messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
        """The next reply as (text, tool calls with string arguments)."""
        self.calls.append(list(messages))
        index = sum(1 for m in messages if m.get("role") == "assistant")
        if index >= len(self.replies):
            raise ScriptExhausted(f"the scripted model has {len(self.replies)} replies; "
                                  f"turn {index + 1} asked for one more")
        reply = self.replies[index]
        if callable(reply):
            reply = reply(messages)
        if isinstance(reply, str):
            return reply, []
        calls = []
        for n, call in enumerate(reply.get("toolCalls") or []):
            arguments = call.get("arguments", {})
            calls.append({"id": str(call.get("id") or f"call_{index}_{n}"),
                          "name": str(call.get("name")),
                          "arguments": arguments if isinstance(arguments, str)
                          else json.dumps(arguments)})
        return str(reply.get("text") or ""), calls
