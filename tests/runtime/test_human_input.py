"""human.input: a run stops with status `waiting` (exit 3) where a person must answer;
`lwtool respond` checks the answer against the step's schema and commits it; the run
goes on from there without calling anything committed again. Each parallel branch and
each loop visit waits on its own step path. A run killed around a wait resumes to the
same wait. In the local world and in PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.cli_runs import LOGGING_TOOLS as TOOLS
from tests.runtime.cli_runs import calls, events, lwtool

FAN = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: approvals}
permissions: {tools: [step]}
steps:
  - {id: a, uses: tool.call, with: {tool: step, args: {name: a, value: "{{ input.v }}"}}}
  - id: fan
    uses: parallel
    needs: [a]
    with: {items: [x, y], maxBranches: 2, maxConcurrency: 2}
    steps:
      - id: ask
        uses: human.input
        with:
          prompt: "Approve {{ item }} for {{ input.v }}?"
          schema: {type: boolean}
      - id: b
        uses: tool.call
        needs: [ask]
        with: {tool: step, args: {name: "b{{ item }}", value: "{{ steps.ask.output }}"}}
  - {id: side, uses: tool.call, needs: [a], with: {tool: step, args: {name: side, value: s}}}
  - id: c
    uses: tool.call
    needs: [fan, side]
    with: {tool: step, args: {name: c, value: "{{ steps.fan.output[1].value }}"}}
"""

LOOP = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: review-loop}
permissions: {tools: [step]}
steps:
  - id: draft
    uses: tool.call
    maxVisits: 3
    with: {tool: step, args: {name: draft, value: "{{ input.v }}"}}
  - id: review
    uses: human.input
    needs: [draft]
    maxVisits: 3
    with:
      prompt: "Round {{ step.visit }}: is {{ steps.draft.lastOutput.value }} good?"
      schema: {type: object, properties: {ok: {type: boolean}}, required: [ok]}
  - id: route
    uses: decision
    needs: [review]
    with: {cases: [{when: "{{ steps.review.lastOutput.ok }}", to: end}], default: draft}
"""


@pytest.fixture()
def folder(tmp_path: Path, world_kind: str) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "fan.lwir.yaml").write_text(FAN)
    (tmp_path / "loop.lwir.yaml").write_text(LOOP)
    (tmp_path / "in.json").write_text('{"v": "s"}')
    (tmp_path / "yes.json").write_text("true")
    (tmp_path / "no.json").write_text("false")
    return tmp_path


def run(folder: Path, workflow: str, run_id: str, *more: str, **env: str):  # type: ignore
    return lwtool(folder, "run", workflow, "-i", "in.json", "--tools", "tools.py:tools",
                  "--run-id", run_id, *more, **env)


def respond(folder: Path, run_id: str, path: str, answer: str, *more: str):  # type: ignore
    return lwtool(folder, "respond", run_id, path, "--input", answer, *more)


def types_of(folder: Path, run_id: str) -> list[str]:
    return [e["type"] for e in events(folder, run_id)]


def test_each_branch_waits_on_its_own_path(folder: Path) -> None:
    first = run(folder, "fan.lwir.yaml", "r", "--json")
    assert first.returncode == 3, first.stderr
    waiting = json.loads(first.stdout)
    assert waiting["status"] == "waiting"
    assert [(w["stepPath"], w["prompt"]) for w in waiting["waitingFor"]] == [
        ("fan[0].ask", "Approve x for s?"), ("fan[1].ask", "Approve y for s?")]
    assert "lwtool respond r fan[0].ask --input FILE --resume" in first.stderr
    assert calls(folder) == {"a": 1, "side": 1}  # what does not need an answer ran
    listed = lwtool(folder, "runs").stdout
    assert listed.splitlines()[1].split()[:2] == ["r", "waiting"]
    assert "waits for input at fan[1].ask: Approve y for s?" in listed
    assert [r["waitingFor"] for r in json.loads(lwtool(folder, "runs", "--json").stdout)][0][0][
        "schema"] == {"type": "boolean"}

    answered = respond(folder, "r", "fan[0].ask", "yes.json")
    assert answered.returncode == 0, answered.stderr
    assert "still waiting at fan[1].ask" in answered.stderr
    again = lwtool(folder, "replay", "r", "--tools", "tools.py:tools", "--json")
    assert again.returncode == 3, again.stderr  # branch 0 went on; branch 1 still waits
    assert [w["stepPath"] for w in json.loads(again.stdout)["waitingFor"]] == ["fan[1].ask"]
    assert calls(folder) == {"a": 1, "side": 1, "bx": 1}

    done = respond(folder, "r", "fan[1].ask", "no.json", "--resume", "--tools",
                   "tools.py:tools", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"value": "False-by-c"}
    assert calls(folder) == {"a": 1, "side": 1, "bx": 1, "by": 1, "c": 1}
    types = types_of(folder, "r")
    assert types.count("HumanInputRequested") == 2  # asked once per path, not per replay
    assert types.count("HumanInputReceived") == 2 and types[-1] == "RunCompleted"
    assert lwtool(folder, "runs").stdout.splitlines()[1].split()[:2] == ["r", "completed"]
    assert lwtool(folder, "verify").returncode == 0


def test_a_wrong_answer_is_refused_and_nothing_is_written(folder: Path) -> None:
    assert run(folder, "fan.lwir.yaml", "w").returncode == 3
    before = types_of(folder, "w")
    (folder / "bad.json").write_text('"yes"')
    wrong = respond(folder, "w", "fan[0].ask", "bad.json")
    assert wrong.returncode == 1
    assert "the answer to fan[0].ask at the top: \"yes\" is not of type \"boolean\"" in \
        wrong.stderr and "nothing was written" in wrong.stderr
    unknown = respond(folder, "w", "fan[7].ask", "yes.json")
    assert unknown.returncode == 2
    assert "no open request for input at fan[7].ask; open requests: fan[0].ask, fan[1].ask" \
        in unknown.stderr
    missing = respond(folder, "nope", "fan[0].ask", "yes.json")
    assert missing.returncode == 2 and "see `lwtool runs`" in missing.stderr
    assert types_of(folder, "w") == before
    assert respond(folder, "w", "fan[0].ask", "yes.json").returncode == 0
    twice = respond(folder, "w", "fan[0].ask", "yes.json")
    assert twice.returncode == 2 and "(answered already)" in twice.stderr


def test_each_loop_visit_waits_on_its_own_path(folder: Path) -> None:
    (folder / "ok.json").write_text('{"ok": true}')
    (folder / "redo.yaml").write_text("ok: false\n")  # YAML answers too
    first = run(folder, "loop.lwir.yaml", "l")
    assert first.returncode == 3
    assert "waits for input at review.visit[0]: Round 0: is s-draft good?" in first.stderr
    second = respond(folder, "l", "review.visit[0]", "redo.yaml", "--resume", "--tools",
                     "tools.py:tools")
    assert second.returncode == 3, second.stderr
    assert "waits for input at review.visit[1]: Round 1" in second.stderr
    done = respond(folder, "l", "review.visit[1]", "ok.json", "--resume", "--tools",
                   "tools.py:tools", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"ok": True}
    assert calls(folder) == {"draft": 2}


def test_a_run_killed_around_a_wait_resumes_to_the_same_wait(folder: Path) -> None:
    killed = run(folder, "fan.lwir.yaml", "k",
                 LWTOOL_FAULT_KILL_AFTER="HumanInputRequested@fan[[]0].ask")
    assert killed.returncode == -9
    assert types_of(folder, "k").count("HumanInputRequested") == 1
    waits = lwtool(folder, "replay", "k", "--tools", "tools.py:tools", "--json")
    assert waits.returncode == 3, waits.stderr
    assert [w["stepPath"] for w in json.loads(waits.stdout)["waitingFor"]] == [
        "fan[0].ask", "fan[1].ask"]
    types = types_of(folder, "k")
    assert types.count("HumanInputRequested") == 2  # fan[0].ask's was not asked again
    assert calls(folder)["a"] == 1
    side = calls(folder)["side"]  # 2 when it was in flight at the kill (at-least-once)

    assert respond(folder, "k", "fan[0].ask", "yes.json").returncode == 0
    assert respond(folder, "k", "fan[1].ask", "yes.json").returncode == 0
    cut = lwtool(folder, "replay", "k", "--tools", "tools.py:tools",
                 LWTOOL_FAULT_KILL_AFTER="StepCompleted@fan[[]0].b")
    assert cut.returncode == -9
    done = lwtool(folder, "replay", "k", "--tools", "tools.py:tools", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"value": "True-by-c"}
    counted = calls(folder)
    assert (counted["a"], counted["side"], counted["bx"], counted["c"]) == (1, side, 1, 1)
    assert types_of(folder, "k").count("HumanInputReceived") == 2


def test_the_python_api_answers_a_waiting_run(folder: Path, world_kind: Any) -> None:
    import asyncio

    import lwtool
    from lwtool.runtime.respond import AnswerInvalid, NotWaiting
    from tests.conftest import Worlds

    world = Worlds.current().world(folder / "data")
    workflow = lwtool.lock_workflow(folder / "loop.lwir.yaml")
    tools = {"step": lambda args: {"value": args["value"]}}
    try:
        with pytest.raises(lwtool.RunWaitingError) as waiting:
            asyncio.run(lwtool.run_workflow(workflow, {"v": "p"}, world=world, tools=tools,
                                            run_id="api"))
        assert waiting.value.requests[0]["stepPath"] == "review.visit[0]"
        assert waiting.value.as_json()["status"] == "waiting"
        with pytest.raises(AnswerInvalid):
            lwtool.respond(world, "api", "review.visit[0]", {"ok": "sure"})
        with pytest.raises(NotWaiting):
            lwtool.respond(world, "api", "review", {"ok": True})
        assert lwtool.respond(world, "api", "review.visit[0]", {"ok": True}, by="ana") == {
            "runId": "api", "stepPath": "review.visit[0]", "open": [], "executing": False}
        received = [e for e in world.events("api") if e.type == "HumanInputReceived"]
        assert received[0].payload == {"stepId": "review", "value": {"ok": True},
                                       "respondedBy": "ana"}
        result = asyncio.run(lwtool.replay_run("api", world=world, tools=tools))
        assert result["output"] == {"ok": True}
    finally:
        world.close()


def test_enqueue_needs_the_postgresql_world(tmp_path: Path) -> None:
    """The local world only (the PostgreSQL side: tests/world/test_worker_operations.py)."""
    from tests.conftest import run_cli

    (tmp_path / "fan.lwir.yaml").write_text(FAN)
    (tmp_path / "in.json").write_text('{"v": "s"}')
    (tmp_path / "yes.json").write_text("true")
    (tmp_path / "tools.py").write_text(TOOLS)
    local = {"cwd": tmp_path, "env": {"LWTOOL_TEST_DIR": str(tmp_path), "LWTOOL_WORLD": ""}}
    assert run_cli("run", "fan.lwir.yaml", "-i", "in.json", "--tools", "tools.py:tools",
                   "--run-id", "q", **local).returncode == 3  # type: ignore[arg-type]
    for extra, said in ((("--enqueue",), "--enqueue needs a PostgreSQL world"),
                        (("--enqueue", "--resume"), "exclude each other")):
        refused = run_cli("respond", "q", "fan[0].ask", "--input", "yes.json", *extra,
                          **local)  # type: ignore[arg-type]
        assert refused.returncode == 2 and said in refused.stderr, refused.stderr
    events = run_cli("events", "q", **local).stdout  # type: ignore[arg-type]
    assert "HumanInputRequested" in events and "HumanInputReceived" not in events


HOSTILE = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: hostile}
steps:
  - id: first
    uses: human.input
    with: {prompt: "{{ input.v }}", schema: {type: boolean}}
  - id: second
    uses: human.input
    needs: [first]
    with: {prompt: "again {{ input.v }}", schema: {type: boolean}}
"""
# An OSC 52 clipboard write, a bell, a screen clear and a C1 CSI, from the run's input.
ESCAPES = "\x1b]52;c;aGk=\x07\x1b[2J\x9b31m"


def test_a_prompt_from_run_input_reaches_no_terminal_raw(tmp_path: Path) -> None:
    (tmp_path / "hostile.lwir.yaml").write_text(HOSTILE)
    (tmp_path / "in.json").write_text(json.dumps({"v": ESCAPES}))
    (tmp_path / "yes.json").write_text("true")
    said = [lwtool(tmp_path, "run", "hostile.lwir.yaml", "-i", "in.json", "--run-id", "h"),
            lwtool(tmp_path, "replay", "h"),
            lwtool(tmp_path, "respond", "h", "first", "--input", "yes.json", "--resume"),
            lwtool(tmp_path, "fork", "h", "--from", "second", "--run-id", "h2")]
    for done in said:
        assert done.returncode == 3, done.stderr
        assert not any(c in done.stderr for c in "\x1b\x07\x9b"), repr(done.stderr)
        assert r"\x1b]52;c;aGk=\x07\x1b[2J\x9b31m" in done.stderr, done.stderr
    assert lwtool(tmp_path, "runs").stdout.count(r"\x1b]52") == 2


def test_safe_text_keeps_lines_only_when_asked() -> None:
    from lwtool.observe.terminal import safe_text

    assert safe_text("a\x1b[2J\nb\tc\x9b") == r"a\x1b[2J\nb\tc\x9b"
    assert safe_text("a\x1b[2J\nb\tc\x7f", lines=True) == "a\\x1b[2J\nb\tc\\x7f"
