"""ai.generate: the offline model for every output mode, repair, litellm (mocked), usage."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, local_world, run_workflow
from lwtool.record.report import usage_report
from tests.conftest import MINIMAL_HEADER
from tests.fixtures.openai_server import fixture_server

OBJECT = {"type": "object", "required": ["label", "score"], "properties": {
    "label": {"type": "string", "minLength": 3}, "score": {"type": "integer", "minimum": 1,
                                                           "maximum": 5}}}


def gen(output: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    step = {"id": "write", "uses": "ai.generate",
            "with": {"model": "gpt-4o-mini", "system": "Be brief.",
                     "prompt": "Classify {{ input.text }}"}, **extra}
    if output is not None:
        step["output"] = output
    return {**copy.deepcopy(MINIMAL_HEADER), "steps": [step]}


def run(doc: dict[str, Any], tmp_path: Path, models: dict[str, str] | None = None
        ) -> tuple[dict[str, Any], Any]:
    world = local_world(tmp_path / "data")
    result = asyncio.run(run_workflow(doc, {"text": "a ticket"}, world=world,
                                      models=models or {"gpt-4o-mini": "offline"}))
    return result, world


@pytest.mark.parametrize(("mode", "check"), [
    ({"mode": "text"}, lambda v: isinstance(v, str) and "Classify a ticket" in v),
    ({"mode": "object", "schema": OBJECT}, lambda v: len(v["label"]) >= 3 and 1 <= v["score"] <= 5),
    ({"mode": "array", "schema": {"type": "array", "items": OBJECT, "minItems": 2}},
     lambda v: len(v) == 2),
    ({"mode": "choice", "values": ["low", "high"]}, lambda v: v in ("low", "high")),
    ({"mode": "json"}, lambda v: isinstance(v, str) and v.startswith("offline: Classify")),
    (None, lambda v: isinstance(v, str)),
])
def test_offline_model_answers_every_mode(tmp_path: Path, mode: Any, check: Any) -> None:
    result, world = run(gen(mode), tmp_path)
    assert check(result["output"]), result["output"]
    assert result["usage"]["unpricedCalls"] == 1 and result["usage"]["costUsd"] is None
    responded = [e for e in world.events(result["runId"]) if e.type == "harness.model.responded"]
    assert responded[0].payload["stepPath"] == "write"
    assert responded[0].payload["model"] == {"provider": "lwtool", "modelId": "offline"}


def test_without_a_prompt_the_message_is_the_input_alone(tmp_path: Path) -> None:
    doc = gen({"mode": "text"}, input={"id": 7})
    del doc["steps"][0]["with"]["prompt"]
    result, world = run(doc, tmp_path)
    called = world.events(result["runId"], ["harness.model.called"])[0]
    assert called.payload["request"]["messages"][-1] == {"role": "user",
                                                          "content": '{"id": 7}'}


def test_prompt_layout(tmp_path: Path) -> None:
    result, world = run(gen({"mode": "text"}, input={"id": 7}), tmp_path)
    called = next(e for e in world.events(result["runId"]) if e.type == "harness.model.called")
    messages = called.payload["request"]["messages"]
    assert messages == [{"role": "system", "content": "Be brief."},
                        {"role": "user", "content": 'Classify a ticket\n\nInput:\n{"id": 7}'}]


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Point litellm's OpenAI provider at a loopback fixture server."""
    def start(replies: list[str], delay: float = 0.0):  # type: ignore[no-untyped-def]
        context = fixture_server(replies, delay)
        server = context.__enter__()
        started.append(context)
        monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fixture")
        return server

    started: list[Any] = []
    yield start
    for context in started:
        context.__exit__(None, None, None)


CLOSED = {"type": "object", "required": ["label", "score"], "additionalProperties": False,
          "properties": {"label": {"type": "string"}, "score": {"type": "integer"}}}


def test_native_structured_output_sends_the_schema(tmp_path: Path, provider: Any) -> None:
    server = provider(['{"label": "billing", "score": 4}'])
    result, world = run(gen({"mode": "object", "schema": CLOSED, "name": "ticket"}), tmp_path,
                        {"gpt-4o-mini": "openai/gpt-4o-mini"})
    assert result["output"] == {"label": "billing", "score": 4}
    sent = server.requests[0]
    assert sent["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "ticket", "schema": CLOSED, "strict": True}}
    # the provider enforces the schema: no format instruction in the prompt
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    called = world.events(result["runId"], ["harness.model.called"])[0].payload
    assert called["request"]["responseFormat"] == sent["response_format"]


def test_a_schema_strict_mode_cannot_hold_is_sent_not_strict(tmp_path: Path,
                                                            provider: Any) -> None:
    server = provider(['{"label": "billing", "score": 3}'])
    run(gen({"mode": "object", "schema": OBJECT}), tmp_path, {"gpt-4o-mini": "openai/gpt-4o-mini"})
    assert server.requests[0]["response_format"]["json_schema"]["strict"] is False


def test_array_mode_is_wrapped_and_unwrapped(tmp_path: Path, provider: Any) -> None:
    server = provider(['{"value": [{"label": "a", "score": 1}]}'])
    schema = {"type": "array", "items": CLOSED}
    result, _ = run(gen({"mode": "array", "schema": schema}), tmp_path,
                    {"gpt-4o-mini": "openai/gpt-4o-mini"})
    assert result["output"] == [{"label": "a", "score": 1}]
    wrapped = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert wrapped == {"type": "object", "properties": {"value": schema},
                       "required": ["value"], "additionalProperties": False}


def test_fallback_is_json_mode_with_the_schema_in_the_prompt(tmp_path: Path,
                                                             provider: Any) -> None:
    """A model litellm does not know to support json_schema gets JSON mode, and the
    schema goes at the end of the system prompt, after with.system (its keys in the
    locked version's order: the same prompt in a first run and in a resumed one)."""
    server = provider(['{"label": "billing", "score": 4}'])
    result, _ = run(gen({"mode": "object", "schema": OBJECT}), tmp_path,
                    {"gpt-4o-mini": "openai/local-model"})
    assert result["output"] == {"label": "billing", "score": 4}
    sent = server.requests[0]
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["messages"][0]["content"] == (
        "Be brief.\n\nReply with only JSON that matches this JSON Schema: "
        + json.dumps(OBJECT, sort_keys=True) + ".")
    assert sent["messages"][1]["content"] == 'Classify a ticket\n\nInput:\n{"text": "a ticket"}'


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "openai/local-model"])
def test_repair_mode_self_re_asks_with_the_findings(tmp_path: Path, provider: Any,
                                                    model: str) -> None:
    server = provider(['{"label": "x"}', '{"label": "fine", "score": 2}'])
    doc = gen({"mode": "object", "schema": OBJECT},
              onFailure={"repair": {"mode": "self", "maxAttempts": 3}})
    result, world = run(doc, tmp_path, {"gpt-4o-mini": model})
    assert result["output"] == {"label": "fine", "score": 2}
    assert len(server.requests) == 2
    second = server.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": '{"label": "x"}'}
    assert "does not fit" in second[-1]["content"] and "score" in second[-1]["content"]
    report = usage_report(world.events(result["runId"]))
    assert report["steps"]["write"]["inputTokens"] == 22


def test_without_repair_a_bad_reply_fails_the_step(tmp_path: Path, provider: Any) -> None:
    provider(["not json"])
    with pytest.raises(RunFailedError) as info:
        run(gen({"mode": "object", "schema": OBJECT}), tmp_path,
            {"gpt-4o-mini": "openai/local-model"})
    assert info.value.cause_code == "step_schema_error"
    assert "not JSON" in info.value.message


def test_litellm_path_with_a_mocked_provider(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The real litellm code path, with litellm's own mock_response instead of a network."""
    import functools

    import litellm

    monkeypatch.setattr(litellm, "acompletion", functools.partial(
        litellm.acompletion, mock_response=json.dumps({"label": "billing", "score": 4})))
    result, world = run(gen({"mode": "object", "schema": OBJECT}), tmp_path,
                        {"gpt-4o-mini": "openai/gpt-4o-mini"})
    assert result["output"] == {"label": "billing", "score": 4}
    usage = result["usage"]
    assert usage["pricedCalls"] == 1 and usage["inputTokens"] > 0
    assert usage["costUsd"] is not None and usage["costUsd"] > 0


@pytest.mark.integration
def test_real_provider(tmp_path: Path) -> None:  # pragma: no cover - needs a key
    result, _ = run(gen({"mode": "choice", "values": ["bug", "question"]}), tmp_path,
                    {"gpt-4o-mini": "openai/gpt-4o-mini"})
    assert result["output"] in ("bug", "question")


def test_prompt_and_response_are_artifacts_of_the_result(tmp_path: Path) -> None:
    result, world = run(gen({"mode": "text"}), tmp_path)
    completed = next(e for e in world.events(result["runId"]) if e.type == "StepCompleted")
    prompt_ref, response_ref = completed.payload["envelope"]["artifacts"]
    messages = json.loads(asyncio.run(world.get_artifact(prompt_ref)))
    assert messages[-1]["content"].startswith("Classify a ticket")
    response = asyncio.run(world.get_artifact(response_ref)).decode()
    assert response == result["output"]


def test_run_result_lists_every_artifact_also_on_replay(tmp_path: Path) -> None:
    from lwtool.runtime.api import replay_run

    result, world = run(gen({"mode": "text"}), tmp_path)
    # the step's output (the run's output has the same content, so the same address),
    # its prompt and its response
    assert len(result["artifacts"]) == 3
    again = asyncio.run(replay_run(result["runId"], world=world))
    assert again["artifacts"] == result["artifacts"]


def test_session_events_follow_the_spec_sequence_and_carry_usage(tmp_path: Path) -> None:
    result, world = run(gen({"mode": "text"}), tmp_path)
    events = [e for e in world.events(result["runId"]) if e.step_path == "write"]
    # ai.generate is not a direct-execute type: no harness.execute_step.* events
    assert [e.type for e in events] == [
        "StepAttemptStarted", "harness.session.started", "harness.model.called",
        "harness.model.responded", "harness.session.completed", "StepCompleted"]
    reply_usage = events[3].payload["response"]["usage"]
    completed = events[4].payload
    assert completed["runId"] == result["runId"]
    assert completed["usage"] == {k: reply_usage[k] for k in (
        "inputTokens", "outputTokens", "cachedInputTokens", "reasoningTokens")}
    assert completed["usage"]["inputTokens"] > 0


def test_a_reply_with_nan_is_not_json(tmp_path: Path, provider: Any) -> None:
    provider(['{"label": "billing", "score": NaN}'])
    with pytest.raises(RunFailedError) as info:
        run(gen({"mode": "json"}), tmp_path, {"gpt-4o-mini": "openai/local-model"})
    assert info.value.cause_code == "step_schema_error"
    assert "NaN is not JSON" in info.value.message


def test_a_slow_provider_times_out_at_the_steps_timeout(tmp_path: Path, provider: Any,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """The step's timeoutMs bounds the model call (passed to litellm as well), the attempt
    fails with `timeout`, and the retry policy applies."""
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # noqa: F401 - its first import (seconds) is not what is timed here

    server = provider(["late", "late"], delay=3)
    doc = gen(None, timeoutMs=400, retry={"maxAttempts": 2, "backoffMs": 0})
    started = time.perf_counter()
    with pytest.raises(RunFailedError) as info:
        run(doc, tmp_path, {"gpt-4o-mini": "openai/gpt-4o-mini"})
    assert time.perf_counter() - started < 2.8  # neither attempt waited for the reply
    assert info.value.cause_code == "timeout"
    assert "longer than 0.4 s (the step's timeoutMs)" in info.value.message
    assert len(server.requests) == 2


def test_negative_token_counts_are_not_a_negative_cost(tmp_path: Path, provider: Any) -> None:
    server = provider(["fine"])
    server.usage = {"prompt_tokens": -5_000_000, "completion_tokens": -7, "total_tokens": -1}
    result, world = run(gen({"mode": "text"}), tmp_path, {"gpt-4o-mini": "openai/gpt-4o-mini"})
    assert result["usage"]["inputTokens"] == 0 and result["usage"]["outputTokens"] == 0
    assert result["usage"]["costUsd"] == 0
    report = usage_report(world.events(result["runId"]))
    assert report["steps"]["write"]["costUsd"] == 0


def test_a_hostile_reply_fails_in_one_short_line(tmp_path: Path, provider: Any) -> None:
    """A reply litellm cannot read (a tool call nested 100,000 deep) made a 200 KB message
    with litellm's traceback and the whole reply, in the log and on stderr."""
    deep = "[" * 100_000 + "]" * 100_000
    provider([{"tool_calls": [{"name": "x", "arguments": deep}]}] * 5)
    with pytest.raises(RunFailedError) as info:
        run(gen({"mode": "text"}), tmp_path, {"gpt-4o-mini": "openai/gpt-4o-mini"})
    assert len(info.value.message) < 600, len(info.value.message)
    assert "Traceback" not in info.value.message and "[[[[" not in info.value.message


def test_a_missing_api_key_is_one_line_naming_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It was litellm's triple-wrapped InternalServerError text, retried as transient."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1")  # never reached
    with pytest.raises(RunFailedError) as info:
        run(gen({"mode": "text"}), tmp_path, {"gpt-4o-mini": "openai/gpt-4o-mini"})
    assert info.value.message.endswith(
        "openai/gpt-4o-mini: no API key (set OPENAI_API_KEY)"), info.value.message
    assert "InternalServerError" not in info.value.message
