"""Real provider wire formats through litellm, each against a loopback server speaking
that provider's own API (tests/fixtures/provider_servers.py): Anthropic Messages,
Gemini generateContent, Ollama /api/chat, OpenAI Chat Completions and Responses. Text,
native structured output, tool calls in an agent session (the tool result goes back in
the provider's own shape), usage and cost, and the errors: 429 with Retry-After
honoured, 5xx retried, a timeout, a context-length or content-filter refusal as its
own cause code. The key comes from the models file's apiKeyEnv and is never written."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, local_world, run_workflow
from lwtool.record.report import usage_report
from tests.fixtures.provider_servers import APIS, USAGE, ProviderServer, provider_server

MODELS = {"anthropic": "anthropic/claude-haiku-4-5-20251001",
          "gemini": "gemini/gemini-2.5-flash", "ollama": "ollama_chat/llama3.1",
          "openai": "openai/gpt-4o-mini", "responses": "openai/responses/gpt-4o-mini"}
SECRET = "sk-lwtool-test-secret-0f9e"
KEY_ENV = "LWTOOL_TEST_PROVIDER_KEY"
TICKET = {"type": "object", "required": ["label", "score"], "additionalProperties": False,
          "properties": {"label": {"type": "string"}, "score": {"type": "integer"}}}
pytestmark = pytest.mark.slow


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Start a provider's loopback server and point its model at it (apiBase, the key
    from KEY_ENV), as a models file entry does."""
    from lwtool.calls import providers

    monkeypatch.setenv(KEY_ENV, SECRET)
    contexts: list[Any] = []

    def start(api: str, replies: list[Any]) -> ProviderServer:
        context = provider_server(api, replies)
        server = context.__enter__()
        contexts.append(context)
        # a self-hosted Ollama enforces a schema, which litellm cannot know of its model
        structured = "native" if api == "ollama" else None
        providers.configure({MODELS[api]: providers.Endpoint(server.api_base, KEY_ENV,
                                                             structured=structured)})
        return server

    yield start
    providers.configure({})
    for context in contexts:
        context.__exit__(None, None, None)


def _flow(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "wire"}, "permissions": {"models": ["m"], "tools": []},
            "steps": list(steps)}


def _gen(sid: str, output: dict[str, Any] | None = None, **more: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"id": sid, "uses": "ai.generate", "with": {
        "model": "m", "prompt": "About {{ input.text }}"}, **more}
    if output is not None:
        step["output"] = output
    return step


def _run(doc: dict[str, Any], api: str, tmp_path: Path) -> tuple[dict[str, Any], Any]:
    world = local_world(tmp_path / "data")
    result = asyncio.run(run_workflow(doc, {"text": "a ticket"}, world=world,
                                      models={"m": MODELS[api]}))
    return result, world


def _structured(api: str, body: dict[str, Any]) -> Any:
    """The schema a request asked the provider to enforce, where that API carries it."""
    if api == "anthropic":
        return (body.get("output_format") or {}).get("schema")
    if api == "gemini":
        return (body.get("generationConfig") or {}).get("response_json_schema")
    if api == "ollama":
        return body.get("format")
    if api == "openai":
        return body["response_format"]["json_schema"]["schema"]
    return body["text"]["format"]["schema"]


def _key_sent(api: str, request: dict[str, Any]) -> bool:
    headers = request["headers"]
    return SECRET in (headers.get("x-api-key", "") + headers.get("x-goog-api-key", "")
                      + headers.get("authorization", "") + request["path"])


def _nowhere_on_disk(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("api", APIS)
def test_text_native_structured_output_usage_and_cost(api: str, served: Any,
                                                      tmp_path: Path) -> None:
    server = served(api, ["Billing trouble.", {"json": {"label": "billing", "score": 4}}])
    doc = _flow(_gen("say"), _gen("classify", {"mode": "object", "schema": TICKET,
                                               "name": "ticket"}, needs=["say"]))
    result, world = _run(doc, api, tmp_path)
    assert result["output"] == {"label": "billing", "score": 4}
    assert _structured(api, server.requests[1]["body"]) == TICKET
    assert all(_key_sent(api, r) for r in server.requests) or api == "ollama"
    report = usage_report(world.events(result["runId"]))
    assert report["steps"]["say"]["inputTokens"] == 13
    assert report["steps"]["classify"]["outputTokens"] == 5
    priced = api != "ollama"  # a self-hosted model has no price
    assert (report["run"]["costUsd"] or 0) > 0 if priced else \
        report["run"]["unpricedCalls"] == 2, report["run"]
    _nowhere_on_disk(tmp_path / "data")


def _adder(calls: list[Any] | None = None) -> Any:
    """A registry with one tool, `add` (x + y), each call's args kept in `calls`."""
    from lwtool import ToolRegistry

    def add(args: dict[str, Any]) -> dict[str, Any]:
        if calls is not None:
            calls.append(args)
        return {"sum": args["x"] + args["y"]}

    tools = ToolRegistry()
    tools.register("add", add, "Add two numbers.", {
        "type": "object", "required": ["x", "y"], "properties": {
            "x": {"type": "integer"}, "y": {"type": "integer"}}})
    return tools


TOOL_RESULT = {  # where each API carries a tool's result back to the model
    "anthropic": lambda body: [part for message in body["messages"]
                               for part in (message["content"] if isinstance(
                                   message["content"], list) else [])
                               if part.get("type") == "tool_result"],
    "gemini": lambda body: [part.get("functionResponse") or part["function_response"]
                            for content in body["contents"] for part in content["parts"]
                            if {"functionResponse", "function_response"} & set(part)],
    "ollama": lambda body: [m for m in body["messages"] if m["role"] == "tool"],
    "openai": lambda body: [m for m in body["messages"] if m["role"] == "tool"],
    "responses": lambda body: [item for item in body["input"]
                               if item.get("type") == "function_call_output"],
}


@pytest.mark.parametrize("api", APIS)
def test_an_agent_session_calls_a_tool_over_the_providers_api(api: str, served: Any,
                                                              tmp_path: Path) -> None:
    from lwtool.harness.session import run_session
    from lwtool.harness.session_spec import SessionSpec

    tools = _adder()
    server = served(api, [{"tool_calls": [{"name": "add", "arguments": {"x": 2, "y": 3}}]},
                          "The sum is 5."])
    world = local_world(tmp_path / "data")
    result = asyncio.run(run_session(world, SessionSpec("agent", MODELS[api], "Add 2 and 3."),
                                     tools, run_id="s1"))
    assert result.text == "The sum is 5."
    assert len(server.requests) == 2
    sent = TOOL_RESULT[api](server.requests[1]["body"])
    assert len(sent) == 1 and '"sum": 5' in json.dumps(sent[0]).replace('\\"', '"'), sent
    calls = world.events("s1", ["harness.tool_call.succeeded"])
    assert [e.payload["result"] for e in calls] == [{"sum": 5}]


@pytest.mark.parametrize("api", APIS)
def test_an_ai_agent_step_calls_a_tool_over_the_providers_api(api: str, served: Any,
                                                              tmp_path: Path) -> None:
    """An ai.agent step's turn that calls a tool, and its final JSON answer, in each
    provider's own shapes: the tool offered, its result carried back, the answer held to
    the step's object mode."""

    tools = _adder()
    server = served(api, [{"tool_calls": [{"name": "add", "arguments": {"x": 2, "y": 3}}]},
                          '{"label": "sum", "score": 5}'])
    doc = _flow({"id": "agent", "uses": "ai.agent", "with": {
        "model": "m", "tools": ["add"], "maxTurns": 3, "prompt": "Add 2 and 3."},
        "output": {"mode": "object", "schema": TICKET}})
    doc["permissions"]["tools"] = ["add"]
    world = local_world(tmp_path / "data")
    result = asyncio.run(run_workflow(doc, {"text": "a ticket"}, world=world,
                                      models={"m": MODELS[api]}, tools=tools))
    assert result["output"] == {"label": "sum", "score": 5}
    assert len(server.requests) == 2
    sent = TOOL_RESULT[api](server.requests[1]["body"])
    assert len(sent) == 1 and '"sum": 5' in json.dumps(sent[0]).replace('\\"', '"'), sent
    report = usage_report(world.events(result["runId"]))
    assert report["steps"]["agent"]["inputTokens"] == 2 * USAGE[0]
    _nowhere_on_disk(tmp_path / "data")


ERRORS = [
    ({"error": 503, "kind": "overloaded"}, None),  # retried: the next attempt answers
    ({"error": 500, "kind": "server"}, None),
    ({"error": 400, "kind": "context_length"}, "context_length_exceeded"),
    ({"error": 400, "kind": "content_filter"}, "content_filtered"),
]


@pytest.mark.parametrize("api", APIS)
def test_errors_are_retried_or_named_by_their_cause(api: str, served: Any,
                                                    tmp_path: Path) -> None:
    for n, (error, cause) in enumerate(ERRORS):
        server = served(api, [error, "recovered"])
        doc = _flow(_gen("say", retry={"maxAttempts": 3, "backoffMs": 0}))
        if cause is None:
            result, _ = _run(doc, api, tmp_path / str(n))
            assert result["output"] == "recovered" and len(server.requests) == 2
            continue
        with pytest.raises(RunFailedError) as failed:
            _run(doc, api, tmp_path / str(n))
        assert failed.value.cause_code == cause, (error, failed.value.message)
        assert len(server.requests) == 1  # the same prompt would fail again


def test_an_agent_step_retried_after_a_503_goes_on_from_its_committed_turns(
        served: Any, tmp_path: Path) -> None:
    """Turn 2 refused (503): the step's next attempt, in the same process, asks turn 2
    again and neither turn 1 nor its tool call, as a resume after a kill would."""

    added: list[Any] = []
    tools = _adder(added)
    server = served("openai", [
        {"tool_calls": [{"name": "add", "arguments": {"x": 2, "y": 3}}]},
        {"error": 503, "kind": "overloaded"}, "The sum is 5."])
    doc = _flow({"id": "agent", "uses": "ai.agent", "retry": {"maxAttempts": 2,
                                                              "backoffMs": 0},
                 "with": {"model": "m", "tools": ["add"], "prompt": "Add 2 and 3."}})
    doc["permissions"]["tools"] = ["add"]
    world = local_world(tmp_path / "data")
    result = asyncio.run(run_workflow(doc, {"text": "a ticket"}, world=world,
                                      models={"m": MODELS["openai"]}, tools=tools))
    assert result["output"] == "The sum is 5."
    assert len(server.requests) == 3 and len(added) == 1
    turns = [e.payload["turn"] for e in world.events(result["runId"])
             if e.type == "harness.model.responded"]
    assert turns == [0, 1]


@pytest.mark.parametrize("api", APIS)
def test_a_429_waits_its_retry_after(api: str, served: Any, tmp_path: Path) -> None:
    server = served(api, [{"error": 429, "kind": "rate_limit", "headers": {
        "Retry-After": "1"}}, "after the wait"])
    doc = _flow(_gen("say", retry={"maxAttempts": 2, "backoffMs": 0}))
    started = time.monotonic()
    result, world = _run(doc, api, tmp_path)
    assert result["output"] == "after the wait" and len(server.requests) == 2
    assert time.monotonic() - started >= 1.0
    failed = world.events(result["runId"], ["StepAttemptFailed"])
    assert [(e.payload["retryAfterS"], e.payload["transient"]) for e in failed] == \
        [(1.0, True)]


@pytest.mark.parametrize("api", APIS)
def test_a_provider_slower_than_the_step_times_out(api: str, served: Any,
                                                   tmp_path: Path) -> None:
    server = served(api, ["warm", {"sleep": 3, "error": 500}])
    # A first call, answered at once: litellm's first import of the provider's code
    # (a second or more on a cold 2-core machine) blocks the loop the deadline needs,
    # and is not the provider's slowness this measures.
    assert _run(_flow(_gen("say")), api, tmp_path / "warm")[0]["output"] == "warm"
    doc = _flow(_gen("say", timeoutMs=400, retry={"maxAttempts": 1}))
    started = time.monotonic()
    with pytest.raises(RunFailedError) as failed:
        _run(doc, api, tmp_path)
    assert failed.value.cause_code == "timeout" and time.monotonic() - started < 2.5
    assert len(server.requests) == 2


def test_retry_after_is_bounded_and_read_in_each_form() -> None:
    from lwtool.calls.provider_errors import MAX_RETRY_AFTER_S, classify, retry_after

    class RateLimitError(Exception):
        def __init__(self, headers: dict[str, str]) -> None:
            super().__init__("rate limited")
            self.litellm_response_headers = headers

    assert retry_after(RateLimitError({"Retry-After": "7"})) == 7.0
    assert retry_after(RateLimitError({"retry-after-ms": "1500"})) == 1.5
    assert retry_after(RateLimitError({"Retry-After": "86400"})) == MAX_RETRY_AFTER_S
    assert retry_after(RateLimitError({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"})) \
        is None
    assert retry_after(RateLimitError({"Retry-After": "nan"})) is None
    failure = classify(RateLimitError({"Retry-After": "2"}))
    assert (failure.cause, failure.transient, failure.retry_after) == ("step_failed", True,
                                                                        2.0)
