"""A session's workspace: memory and scratch through its bash tool, skills in its system
prompt and staged read-only, refused and over-limit commands recorded while the
session carries on, role manifests with every field the spec lists, drift on resume
when a skill, the sandbox or the memory changes, failing closed without bubblewrap,
and the loop through litellm against a loopback server with bash tool calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, ToolRegistry, local_world
from lwtool.calls.scripted import ScriptedModel
from lwtool.harness.bash import BashOptions
from lwtool.harness.manifests import role_manifest, worker_manifest
from lwtool.harness.session import run_session
from lwtool.harness.session_spec import SessionSpec
from lwtool.harness.stores import MemoryConfig
from lwtool.record.errors import CapabilityDriftError
from lwtool.sandbox.bwrap import bwrap_problem
from lwtool.world.base import RunNotFound
from tests.fixtures.openai_server import fixture_server
from tests.harness.test_bash import requires_bwrap

SANDBOX = BashOptions(timeout=10.0)


def _bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


def _skill(folder: Path, name: str, description: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n"
                                     f"Always say {name}.\n")
    return str(folder)


def _results(world: Any, run_id: str) -> list[Any]:
    by_id = {e.payload["callId"]: e.payload for e in world.events(run_id, [
        "harness.tool_call.succeeded", "harness.tool_call.failed"])}
    return [by_id[e.payload["callId"]].get("result", by_id[e.payload["callId"]].get("error"))
            for e in world.events(run_id, ["harness.tool_call.started"])]


@requires_bwrap
def test_a_session_works_in_its_memory_scratch_and_skills(tmp_path: Path) -> None:
    data = tmp_path / "data"
    world = local_world(data)
    (data / "memory/org/skills/house-style").mkdir(parents=True)
    _skill(data / "memory/org/skills/house-style", "house-style", "The org's tone.")
    skill = _skill(tmp_path / "skills/triage", "triage", "How to triage a ticket.")
    model = ScriptedModel([
        {"toolCalls": [_bash("cat .agents/skills/triage/SKILL.md"),
                       _bash("echo 'prefer short replies' >> /mnt/memory/workflow/lessons.md")]},
        {"toolCalls": [_bash("echo x > .agents/skills/triage/SKILL.md"),
                       _bash("cat /etc/passwd"),
                       _bash("echo scratch > notes.txt && ls")]},
        "done"])
    spec = SessionSpec("planner", model, "Triage.", system="Be brief.", workflow_id="support",
                       skills=(skill,), bash=SANDBOX,
                       identity={"workflowDefinitionHash": "sha256:def"})
    result = asyncio.run(run_session(world, spec, ToolRegistry(), run_id="p1"))
    assert result.text == "done" and result.tool_calls == 5
    system = model.calls[0][0]["content"]
    assert system == ("Available skills (read via cat .agents/skills/<name>/SKILL.md):\n"
                      "- house-style: The org's tone.\n- triage: How to triage a ticket."
                      "\n\nBe brief.")
    results = _results(world, "p1")
    assert results[0]["stdout"].endswith("Always say triage.\n")
    assert results[1]["exitCode"] == 0
    assert "read-only" in results[2] and "outside the mounts" in results[3]
    assert results[4]["stdout"] == "notes.txt\n"
    assert (data / "memory/workflows/support/lessons.md").read_text() == \
        "prefer short replies\n"
    assert not (data / "runs/p1").exists()  # scratch goes with the session
    started = world.events("p1", ["harness.session.started"])[0].payload
    assert [s["name"] for s in started["skills"]] == ["house-style", "triage"]
    assert set(started["manifest"]) == {
        "harnessId", "plannerModelSlotId", "systemPromptHash", "skillsHash",
        "workflowDefinitionHash", "globalToolsHash", "bashCapabilitiesHash",
        "memoryStoreIds"}
    assert started["manifest"]["memoryStoreIds"] == ["org:ro", "workflows/support:rw"]


@requires_bwrap
def test_drift_when_a_skill_the_sandbox_or_the_memory_changes(tmp_path: Path) -> None:
    world = local_world(tmp_path / "data")
    skill = _skill(tmp_path / "skills/s", "s", "One.")

    def spec(**change: Any) -> SessionSpec:
        settings: dict[str, Any] = {"workflow_id": "wf", "skills": (skill,), "bash": SANDBOX,
                                    **change}
        return SessionSpec("agent", ScriptedModel(["ok"]), "go", **settings)

    asyncio.run(run_session(world, spec(), run_id="d1"))
    asyncio.run(run_session(world, spec(), run_id="d1"))  # unchanged: fine
    _skill(tmp_path / "skills/s", "s", "One, edited.")
    with pytest.raises(CapabilityDriftError, match="skillsHash"):
        asyncio.run(run_session(world, spec(), run_id="d1"))
    _skill(tmp_path / "skills/s", "s", "One.")
    with pytest.raises(CapabilityDriftError, match="bashCapabilitiesHash"):
        asyncio.run(run_session(world, spec(bash=BashOptions(timeout=11.0)), run_id="d1"))
    with pytest.raises(CapabilityDriftError, match="bashCapabilitiesHash, memoryStoreIds"):
        asyncio.run(run_session(world, spec(memory=MemoryConfig(org="none")), run_id="d1"))


def test_role_manifests_have_the_spec_fields() -> None:
    from lwtool.harness.manifests import SessionCapabilities

    caps = SessionCapabilities("h@1", "slot", "sys", "sha256:s", "sha256:t", "sha256:b", [])
    orchestrator = role_manifest("orchestrator", caps, {"availableWorkflows": ["a"],
                                                        "maxConcurrentSubRuns": 10})
    assert set(orchestrator) == {
        "harnessId", "orchestratorModelSlotId", "systemPromptHash", "skillsHash",
        "availableWorkflows", "globalToolsHash", "bashCapabilitiesHash", "memoryStoreIds",
        "maxConcurrentSubRuns"}
    worker = {"workflowDefinitionHash": "d", "workflowVersionId": "v", "stepPath": "a",
              "stepConfigHash": "c"}
    assert set(role_manifest("fixer", caps, {**worker, "fixerMaxAttempts": 2})) == {
        "harnessId", "workflowDefinitionHash", "workflowVersionId", "stepPath",
        "stepConfigHash", "systemPromptHash", "skillsHash", "allowedToolsHash",
        "bashCapabilitiesHash", "memoryStoreIds", "fixerModelSlotId", "fixerSystemHash",
        "fixerMaxAttempts"}
    assert set(worker_manifest("h", "v", "a", "c", "t", model_slot="m", system="s")) == {
        "harnessId", "workflowDefinitionHash", "workflowVersionId", "stepPath",
        "stepConfigHash", "modelSlotId", "systemPromptHash", "skillsHash",
        "allowedToolsHash", "bashCapabilitiesHash", "memoryStoreIds"}
    with pytest.raises(ValueError, match="missing: workflowDefinitionHash"):
        role_manifest("planner", caps, {})
    with pytest.raises(ValueError, match="unknown: bogus"):
        role_manifest("agent", caps, {"bogus": 1})


def test_without_bubblewrap_a_bash_session_does_not_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    world = local_world(tmp_path / "data")
    monkeypatch.setenv("PATH", str(tmp_path))
    bwrap_problem.cache_clear()
    try:
        with pytest.raises(RunFailedError) as info:
            asyncio.run(run_session(world, SessionSpec("agent", ScriptedModel(["ok"]), "go",
                                                       bash=BashOptions()), run_id="b1"))
    finally:
        monkeypatch.undo()
        bwrap_problem.cache_clear()
    assert info.value.cause_code == "runtime_config_error"
    assert "bubblewrap is not installed" in info.value.message
    with pytest.raises(RunNotFound):
        world.get_run("b1")  # nothing recorded: fixed, the same id starts cleanly


def test_a_tool_named_bash_clashes_with_the_sessions_own(tmp_path: Path) -> None:
    tools = ToolRegistry()
    tools.register("bash", lambda args: None)
    with pytest.raises(RunFailedError, match="rename the tool 'bash'"):
        asyncio.run(run_session(local_world(tmp_path / "d"), SessionSpec(
            "agent", ScriptedModel(["ok"]), "go",
            bash=BashOptions(sandbox="path-check")), tools, run_id="c1"))


@requires_bwrap
def test_bash_tool_calls_through_litellm_and_a_loopback_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    command = "echo 42 > /mnt/memory/workflow/answer && cat /mnt/memory/workflow/answer"
    replies: list[Any] = [
        {"tool_calls": [{"name": "bash", "arguments": json.dumps({"command": command})},
                        {"name": "bash", "arguments": "{not json"}]},
        "The answer is 42."]
    world = local_world(tmp_path / "data")
    with fixture_server(replies) as server:
        for name in ("OPENAI_API_BASE", "OPENAI_BASE_URL"):
            monkeypatch.setenv(name, server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fixture")
        spec = SessionSpec("agent", "openai/gpt-4o-mini", "Find the answer.",
                           workflow_id="wf", bash=SANDBOX)
        result = asyncio.run(run_session(world, spec, run_id="l1"))
    assert result.text == "The answer is 42."
    offered = server.requests[0]["tools"]
    assert [t["function"]["name"] for t in offered] == ["bash"]
    assert "/mnt/memory/workflow (rw)" in offered[0]["function"]["description"]
    fed_back = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert json.loads(fed_back[0]["content"])["stdout"] == "42\n"
    assert "refused" in fed_back[1]["content"]
    assert (tmp_path / "data/memory/workflows/wf/answer").read_text() == "42\n"
