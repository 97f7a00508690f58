"""onFailure.repair mode escalate: a reply that breaks the output contract is repaired on
`repair.model` (a stronger slot) from the second attempt on, each attempt recorded with
its own model; a SIGKILL after the first reply replays to one more call, on the repair
model only; over maxAttempts the step fails naming the repair slot; validate knows the
slot."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, local_world, run_workflow
from tests.conftest import MINIMAL_HEADER, run_cli
from tests.fixtures.openai_server import fixture_server

OBJECT = {"type": "object", "required": ["label", "score"], "properties": {
    "label": {"type": "string", "minLength": 3}, "score": {"type": "integer"}}}
MODELS = {"fast": "openai/gpt-4o-mini", "strong": "openai/gpt-4o"}
BAD, GOOD = '{"label": "x"}', '{"label": "fine", "score": 2}'


def _doc(attempts: int = 3) -> dict[str, Any]:
    doc = copy.deepcopy(MINIMAL_HEADER)
    doc["permissions"] = {**doc.get("permissions", {}), "models": ["fast", "strong"]}
    doc["steps"] = [{"id": "label", "uses": "ai.generate",
                     "with": {"model": "fast", "prompt": "Label {{ input.text }}"},
                     "output": {"mode": "object", "schema": OBJECT},
                     "onFailure": {"repair": {"mode": "escalate", "model": "strong",
                                              "maxAttempts": attempts}}}]
    return doc


def _env(server: Any) -> dict[str, str]:
    return {"OPENAI_API_BASE": server.base_url, "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-fixture"}


def test_the_repair_runs_on_the_stronger_slot(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    world = local_world(tmp_path / "data")
    with fixture_server([BAD, GOOD]) as server:
        for key, value in _env(server).items():
            monkeypatch.setenv(key, value)
        result = asyncio.run(run_workflow(_doc(), {"text": "a ticket"}, world=world,
                                          models=MODELS))
    assert result["output"] == {"label": "fine", "score": 2}
    assert [r["model"] for r in server.requests] == ["gpt-4o-mini", "gpt-4o"]
    assert "does not fit" in server.requests[1]["messages"][-1]["content"]
    responded = [e.payload["model"]["modelId"] for e in world.events(result["runId"])
                 if e.type == "harness.model.responded"]
    assert responded == ["gpt-4o-mini", "gpt-4o"]  # each attempt with its own model


def test_over_max_attempts_the_step_fails_naming_the_repair_slot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    world = local_world(tmp_path / "data")
    with fixture_server([BAD, BAD]) as server:
        for key, value in _env(server).items():
            monkeypatch.setenv(key, value)
        with pytest.raises(RunFailedError) as info:
            asyncio.run(run_workflow(_doc(2), {"text": "a ticket"}, world=world,
                                     models=MODELS))
    assert info.value.cause_code == "step_schema_error"
    assert "after 2 attempt(s) (1 on repair model slot 'strong')" in info.value.message


def test_a_kill_after_the_first_reply_replays_to_one_call_on_the_repair_model(
        tmp_path: Path) -> None:
    (tmp_path / "flow.lwir.json").write_text(json.dumps(_doc()))
    (tmp_path / "models.json").write_text(json.dumps(MODELS))
    (tmp_path / "in.json").write_text('{"text": "a ticket"}')
    args = ["--models", "models.json", "--data-dir", "d", "--json"]
    with fixture_server([BAD, GOOD]) as server:
        killed = run_cli("run", "flow.lwir.json", "-i", "in.json", "--run-id", "k", *args,
                         cwd=tmp_path, env={**_env(server), "LWTOOL_FAULT_KILL_AFTER":
                                            "harness.model.responded@label"})
    assert killed.returncode == -9, killed.stderr
    assert [r["model"] for r in server.requests] == ["gpt-4o-mini"]
    with fixture_server([GOOD]) as again:
        done = run_cli("replay", "k", *args, cwd=tmp_path, env=_env(again))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"label": "fine", "score": 2}
    assert [r["model"] for r in again.requests] == ["gpt-4o"]  # the first reply stood


def test_validate_knows_the_repair_slot(tmp_path: Path) -> None:
    doc = _doc()
    doc["permissions"]["models"] = ["fast"]
    (tmp_path / "flow.lwir.json").write_text(json.dumps(doc))
    found = run_cli("validate", "flow.lwir.json", "--format", "json", cwd=tmp_path)
    codes = {f["code"]: f["pointer"] for f in json.loads(found.stdout)["files"][0]["findings"]}
    assert codes == {"permissions.unknown_model": "/steps/0/onFailure/repair/model"}, codes
    (tmp_path / "flow.lwir.json").write_text(json.dumps(_doc()))
    assert run_cli("validate", "flow.lwir.json", cwd=tmp_path).returncode == 0
    portable = run_cli("validate", "flow.lwir.json", "--portable", "--format", "json",
                       cwd=tmp_path)
    flagged = json.loads(portable.stdout)["files"][0]["findings"]
    assert [(f["code"], f["pointer"]) for f in flagged] == [
        ("portable.extension", "/steps/0/onFailure/repair/mode")]
