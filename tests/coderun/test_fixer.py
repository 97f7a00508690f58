"""onFailure.fixer: a fix_step session through litellm against the loopback server
heals a failed code.run attempt; its fixedSource is logged, never written back; bad
fixes use up maxAttempts and the step fails with the last error."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, local_world, run_workflow
from tests.fixtures.openai_server import fixture_server

EXAMPLE = json.loads((Path(__file__).parent.parent / "conformance" / "spec_examples" /
                      "code-run-fixer.lwir.json").read_text())
MODELS = {"gpt-4o-mini": "openai/gpt-4o-mini"}
FIXED = ("export async function run({ input }) {\n"
         "  const s = input.signals;\n"
         "  const n = Array.isArray(s) ? s.length : Number(s);\n"
         "  return { score: n / 10 };\n}")


@pytest.fixture
def loopback(monkeypatch: pytest.MonkeyPatch) -> Any:
    def serve(replies: list[Any]) -> Any:
        server = fixture_server(replies)
        running = server.__enter__()
        for name in ("OPENAI_API_BASE", "OPENAI_BASE_URL"):
            monkeypatch.setenv(name, running.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fixture")
        served.append(server)
        return running

    served: list[Any] = []
    yield serve
    for server in served:
        server.__exit__(None, None, None)


def _call(name: str, source: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": json.dumps({"source": source})}]}


def test_the_fixer_heals_the_spec_example(tmp_path: Path, loopback: Any) -> None:
    server = loopback([_call("run_code", FIXED), _call("submit_fix", FIXED)])
    world = local_world(tmp_path)
    lwir = copy.deepcopy(EXAMPLE)
    result = asyncio.run(run_workflow(lwir, {"signals": 3}, world=world, models=MODELS,
                                      run_id="r"))
    assert result["output"] == {"score": 0.3}
    assert lwir == EXAMPLE  # the LWIR is never touched
    sessions = world.events("r", ["harness.session.started"])
    fixer = next(e for e in sessions if e.payload["role"] == "fixer")
    assert fixer.step_path == "compute-score#fix"
    assert fixer.payload["task"] == {"kind": "fix_step", "priorFixAttempts": 0}
    assert fixer.payload["parentRunId"] == "r"  # the run whose step it fixes
    manifest = fixer.payload["manifest"]
    assert manifest["fixerModelSlotId"] == "gpt-4o-mini" and manifest["fixerMaxAttempts"] == 3
    done = [e for e in world.events("r", ["harness.session.completed"])
            if e.step_path == "compute-score#fix"]
    assert done[0].payload["output"] == {"kind": "fix_step", "fixedSource": FIXED,
                                         "attempts": 1}
    first = server.requests[0]["messages"]
    assert first[0]["content"].startswith("Fix the code so it returns output matching")
    assert "input.signals.length" in first[1]["content"] and "NaN" in first[1]["content"]
    assert {t["function"]["name"] for t in server.requests[0]["tools"]} >= {
        "run_code", "submit_fix"}
    tool_result = json.loads(server.requests[1]["messages"][-1]["content"])
    assert tool_result["ok"] is True and tool_result["output"] == {"score": 0.3}
    completed = world.events("r", ["StepCompleted"])[0]
    assert completed.payload["envelope"]["output"] == {"score": 0.3}


def test_bad_fixes_use_up_the_attempts(tmp_path: Path, loopback: Any) -> None:
    lwir = copy.deepcopy(EXAMPLE)
    lwir["steps"][0]["onFailure"]["fixer"]["maxAttempts"] = 2
    still_broken = "export async function run() { return { score: 'high' }; }"
    loopback([_call("submit_fix", still_broken), _call("submit_fix", "syntax error(")])
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(lwir, {"signals": 3}, world=local_world(tmp_path),
                                 models=MODELS, run_id="r"))
    assert info.value.failed_step_path == "compute-score"
    assert "the fixer's 2 fix(es) all failed; the last:" in info.value.message


def test_a_fixer_that_only_talks_fails_the_step(tmp_path: Path, loopback: Any) -> None:
    loopback(["I think the input is wrong."])
    world = local_world(tmp_path)
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(copy.deepcopy(EXAMPLE), {"signals": 3}, world=world,
                                 models=MODELS, run_id="r"))
    assert "without an accepted fix" in info.value.message
    assert "NaN" in info.value.message
    assert world.events("r", ["harness.session.failed"])


def test_no_fixer_when_the_code_works(tmp_path: Path, loopback: Any) -> None:
    server = loopback([])
    result = asyncio.run(run_workflow(copy.deepcopy(EXAMPLE), {"signals": [1, 2]},
                                      world=local_world(tmp_path), models=MODELS))
    assert result["output"] == {"score": 0.2} and server.requests == []
