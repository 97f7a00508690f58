"""ai.generate: the offline model for every output mode, repair, litellm (mocked), usage."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, local_world, run_workflow
from lwtool.harness.models import ModelReply
from lwtool.runtime.report import usage_report
from lwtool.runtime.steps import ai_generate
from tests.conftest import MINIMAL_HEADER

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
    ({"mode": "json"}, lambda v: v is not None),
    (None, lambda v: isinstance(v, str)),
])
def test_offline_model_answers_every_mode(tmp_path: Path, mode: Any, check: Any) -> None:
    result, world = run(gen(mode), tmp_path)
    assert check(result["output"]), result["output"]
    assert result["usage"]["unpricedCalls"] == 1 and result["usage"]["costUsd"] is None
    responded = [e for e in world.events(result["runId"]) if e.type == "harness.model.responded"]
    assert responded[0].payload["stepPath"] == "write"
    assert responded[0].payload["model"] == {"provider": "lwtool", "modelId": "offline"}


def test_prompt_layout(tmp_path: Path) -> None:
    result, world = run(gen({"mode": "text"}, input={"id": 7}), tmp_path)
    called = next(e for e in world.events(result["runId"]) if e.type == "harness.model.called")
    messages = called.payload["request"]["messages"]
    assert messages == [{"role": "system", "content": "Be brief."},
                        {"role": "user", "content": 'Classify a ticket\n\nInput:\n{"id": 7}'}]


def test_repair_mode_self_retries_with_the_error(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    replies = iter(['{"label": "x"}', '{"label": "fine", "score": 2}'])
    seen: list[list[dict[str, str]]] = []

    async def fake(model: str, messages: Any, mode: Any, prompt: str) -> ModelReply:
        seen.append(messages)
        return ModelReply(next(replies), {"inputTokens": 10, "outputTokens": 5,
                                          "cachedInputTokens": 0, "reasoningTokens": 0},
                          "openai", "gpt-4o-mini", 1)

    monkeypatch.setattr(ai_generate, "call_model", fake)
    doc = gen({"mode": "object", "schema": OBJECT},
              onFailure={"repair": {"mode": "self", "maxAttempts": 3}})
    result, world = run(doc, tmp_path, {"gpt-4o-mini": "openai/gpt-4o-mini"})
    assert result["output"] == {"label": "fine", "score": 2}
    assert len(seen) == 2 and "does not fit" in seen[1][-1]["content"]
    report = usage_report(world.events(result["runId"]))
    assert report["steps"]["write"]["inputTokens"] == 20


def test_without_repair_a_bad_reply_fails_the_step(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    async def fake(model: str, messages: Any, mode: Any, prompt: str) -> ModelReply:
        return ModelReply("not json", {"inputTokens": 1, "outputTokens": 1,
                                       "cachedInputTokens": 0, "reasoningTokens": 0},
                          "openai", "gpt-4o-mini", 1)

    monkeypatch.setattr(ai_generate, "call_model", fake)
    with pytest.raises(RunFailedError) as info:
        run(gen({"mode": "object", "schema": OBJECT}), tmp_path)
    assert info.value.cause_code == "step_schema_error"


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
