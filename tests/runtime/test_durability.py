"""Durability modes and what the step path commits: strict fsyncs every result commit,
process none; the mode is the run's (recorded in RunStarted, kept on resume); a fast
step's evidence and result share one commit, a slow step's evidence shows while it
runs; a locked workflow runs without being validated or hashed again; a non-blocking
sync tool runs on the event loop; a loop shared by several runs (a worker) is never
blocked by a commit."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from lwtool.runtime.api import WorkflowInvalid, lock_workflow, run_workflow
from lwtool.runtime.interpreter import resume_run, start_run
from lwtool.tools import ToolRegistry
from lwtool.world.base import NewEvent
from lwtool.world.local import LocalWorld, local_world
from tests.conftest import MINIMAL_HEADER, run_cli

HEADER = {**MINIMAL_HEADER, "permissions": {"models": [], "tools": ["echo", "stop"]}}
CHAIN = {**HEADER, "steps": [
    {"id": "a", "uses": "tool.call", "with": {"tool": "echo"}, "input": {"v": "a"}},
    {"id": "b", "uses": "tool.call", "with": {"tool": "stop"}, "needs": ["a"],
     "input": {"v": "{{ steps.a.output.v }}-b"}},
    {"id": "c", "uses": "tool.call", "with": {"tool": "echo"}, "needs": ["b"],
     "input": {"v": "{{ steps.b.output.v }}-c"}},
]}


class Stop(BaseException):
    """Ends the process's run at once, as a kill would (nothing handles it)."""


class Spy(LocalWorld):
    """A local world that remembers how each commit was asked to be made."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commits: list[tuple[list[str], bool]] = []
        self.large: list[bool] = []

    def append(self, run_id: str, events: Sequence[NewEvent], status: str | None = None,
               artifacts: Sequence[tuple[str, bytes]] = (), durable: bool = True,
               when_status: str | None = None) -> Any:
        self.commits.append(([e.type for e in events], durable))
        return super().append(run_id, events, status, artifacts, durable, when_status)

    async def put_artifact(self, data: bytes, durable: bool = True) -> str:
        self.large.append(durable)
        return await super().put_artifact(data, durable)


def _tools(stop_once: bool = False, big: bool = False) -> ToolRegistry:
    stopped: list[bool] = []
    registry = ToolRegistry()

    async def echo(args: Any) -> Any:
        return {"v": args["v"], **({"pad": "x" * 300_000} if big else {})}

    async def stop(args: Any) -> Any:
        if stop_once and not stopped:
            stopped.append(True)
            raise Stop
        return {"v": args["v"]}

    registry.register("echo", echo)
    registry.register("stop", stop)
    return registry


def _step_commits(world: Spy) -> list[tuple[list[str], bool]]:
    return [c for c in world.commits if "StepCompleted" in c[0]]


@pytest.mark.parametrize("mode", ["strict", "process"])
def test_the_mode_decides_every_result_commit_and_is_recorded(tmp_path: Path,
                                                                mode: str) -> None:
    world = Spy(tmp_path / "data", durability=mode)
    result = asyncio.run(start_run(world, {**CHAIN, "steps": CHAIN["steps"][:1]},
                                   {}, _tools(big=True), {}))
    assert result["output"]["v"] == "a"
    started = world.events(result["runId"], ["RunStarted"])[0]
    assert started.payload["durability"] == mode
    assert world.get_run(result["runId"]).options["durability"] == mode
    steps = _step_commits(world)
    assert steps and all(durable is (mode == "strict") for _, durable in steps)
    assert world.large and set(world.large) == {mode == "strict"}  # 300 KB: a file


def test_a_run_keeps_its_mode_when_resumed_by_a_world_with_another(tmp_path: Path) -> None:
    world = LocalWorld(tmp_path / "data", durability="process")
    with pytest.raises(Stop):
        asyncio.run(start_run(world, CHAIN, {}, _tools(stop_once=True), {}, run_id="r1"))
    world.close()
    strict = Spy(tmp_path / "data")  # the world's default is strict
    result = asyncio.run(resume_run(strict, "r1", _tools(), {}))
    assert result["output"] == {"v": "a-b-c"}
    assert _step_commits(strict) and not any(d for _, d in strict.commits)


def test_a_fast_steps_evidence_shares_its_result_commit(tmp_path: Path) -> None:
    world = Spy(tmp_path / "data")
    asyncio.run(start_run(world, {**CHAIN, "steps": CHAIN["steps"][:1]}, {}, _tools(), {}))
    assert world.commits[0][0] == [
        "StepAttemptStarted", "harness.session.started", "harness.execute_step.started",
        "harness.execute_step.succeeded", "harness.session.completed", "StepCompleted"]


def test_a_slow_steps_evidence_is_committed_while_it_runs(tmp_path: Path) -> None:
    world = LocalWorld(tmp_path / "data")
    seen: list[list[str]] = []
    registry = ToolRegistry()

    async def slow(args: Any) -> Any:
        await asyncio.sleep(0.3)
        seen.append([e.type for e in LocalWorld(tmp_path / "data").events("r1")])
        return {"v": 1}

    registry.register("echo", slow)
    asyncio.run(start_run(world, {**CHAIN, "steps": CHAIN["steps"][:1]}, {}, registry, {},
                          run_id="r1"))
    assert seen == [["RunStarted", "StepAttemptStarted", "harness.session.started",
                     "harness.execute_step.started"]]


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown durability 'fast'"):
        local_world(".never-made", durability="fast")


def test_start_run_refuses_an_unknown_mode(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="use strict .* or process"):
        asyncio.run(start_run(LocalWorld(tmp_path / "data"), CHAIN, {}, _tools(), {},
                              durability="fast"))


def test_a_locked_workflow_is_validated_and_hashed_once(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    locked = lock_workflow({**CHAIN, "steps": CHAIN["steps"][:1]})
    import lwtool.runtime.api as api
    import lwtool.runtime.interpreter as interpreter

    def never(*_: Any) -> Any:
        raise AssertionError("validated or hashed again")

    monkeypatch.setattr(interpreter, "canonical_bytes", never)
    monkeypatch.setattr(api, "checked_lwir", never)
    world = LocalWorld(tmp_path / "data")
    results = [asyncio.run(run_workflow(locked, {}, world=world, tools=_tools(),
                                        durability="process")) for _ in range(2)]
    assert {r["workflowVersionId"] for r in results} == {locked.version_id}
    assert world.get_run(results[0]["runId"]).options["durability"] == "process"
    assert world.get_version(locked.version_id) == locked.lwir


def test_locking_an_invalid_workflow_says_where() -> None:
    with pytest.raises(WorkflowInvalid) as info:
        lock_workflow({**CHAIN, "steps": [{"id": "a", "uses": "tool.cal"}]})
    assert info.value.findings


def test_a_non_blocking_sync_tool_runs_on_the_loop_a_blocking_one_in_a_thread(
        tmp_path: Path) -> None:
    threads: dict[str, int] = {}
    registry = ToolRegistry()

    def fast(args: Any) -> Any:
        threads["fast"] = threading.get_ident()
        return {"v": args["v"]}

    def blocking(args: Any) -> Any:
        threads["blocking"] = threading.get_ident()
        return {"v": args["v"]}

    registry.register("echo", fast, blocking=False)
    registry.register("stop", blocking)
    result = asyncio.run(start_run(LocalWorld(tmp_path / "data"), CHAIN, {}, registry, {}))
    assert result["output"] == {"v": "a-b-c"}
    assert threads["fast"] == threading.get_ident() != threads["blocking"]


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _cli_run(tmp_path: Path, *extra: str, env: dict[str, str] | None = None,
             path: Path = EXAMPLES / "refine-loop.lwir.yaml") -> Any:
    return run_cli("run", str(path), "--input", str(EXAMPLES / "inputs" / "refine-loop.json"),
                   "--tools", f"{EXAMPLES / 'tools.py'}:tools", "--data-dir",
                   str(tmp_path / "data"), "--json", *extra, env=env)


def _recorded_mode(tmp_path: Path, run_id: str) -> str:
    events = run_cli("events", run_id, "--data-dir", str(tmp_path / "data"), "--json",
                     "--type", "RunStarted")
    return str(json.loads(events.stdout)["payload"]["durability"])


def test_the_cli_takes_the_flag_then_the_env_then_the_definition(tmp_path: Path) -> None:
    definition = tmp_path / "loop.definition.yaml"
    definition.write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\nid: loop\n"
        f"planner:\n  plan: {EXAMPLES / 'refine-loop.lwir.yaml'}\n"
        "runtime:\n  durability: process\n")
    cases = [((), None, EXAMPLES / "refine-loop.lwir.yaml", "strict"),
             (("--durability", "process"), None, EXAMPLES / "refine-loop.lwir.yaml", "process"),
             ((), {"LWTOOL_DURABILITY": "process"}, EXAMPLES / "refine-loop.lwir.yaml",
              "process"),
             ((), None, definition, "process"),
             (("--durability", "strict"), None, definition, "strict")]
    for n, (flags, env, path, expected) in enumerate(cases):
        done = _cli_run(tmp_path, "--run-id", f"r{n}", *flags, env=env, path=path)
        assert done.returncode == 0, done.stderr
        assert _recorded_mode(tmp_path, f"r{n}") == expected, (flags, env, path)


def test_the_cli_refuses_an_unknown_mode(tmp_path: Path) -> None:
    done = _cli_run(tmp_path, "--durability", "fast")
    assert done.returncode == 2
    assert "'fast' is not one of 'strict', 'process'" in done.stderr
    assert not (tmp_path / "data").exists()


def test_a_definition_with_an_unknown_mode_does_not_validate(tmp_path: Path) -> None:
    definition = tmp_path / "bad.definition.yaml"
    definition.write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\nid: bad\n"
        "planner:\n  model: m\nruntime:\n  durability: fast\n")
    done = run_cli("validate", str(definition))
    assert done.returncode == 1
    assert f"{definition}:7:15: error lwir.invalid_field \"fast\" is not one of" in done.stdout


def test_a_resumed_run_gives_back_numbers_exactly(tmp_path: Path) -> None:
    """Replay reads inline outputs from the log: the largest integer a value may hold
    (±(2**53 - 1); beyond it a tool's output is refused) and floats come back as they
    were."""
    registry = ToolRegistry()
    stopped: list[bool] = []

    async def echo(args: Any) -> Any:
        return {"v": [2**53 - 1, -(2**53 - 1), 0.1, 1.5e-7, 1e21]}

    async def stop(args: Any) -> Any:
        if not stopped:
            stopped.append(True)
            raise Stop
        return {"v": args["v"]}

    registry.register("echo", echo)
    registry.register("stop", stop)
    lwir = {**CHAIN, "steps": [dict(CHAIN["steps"][0]), dict(CHAIN["steps"][1], input={
        "v": "{{ steps.a.output.v }}"})]}
    world = LocalWorld(tmp_path / "data", durability="process")
    with pytest.raises(Stop):
        asyncio.run(start_run(world, lwir, {}, registry, {}, run_id="r1"))
    result = asyncio.run(resume_run(LocalWorld(tmp_path / "data"), "r1", registry, {}))
    assert result["output"] == {"v": [2**53 - 1, -(2**53 - 1), 0.1, 1.5e-7, 1e21]}
    assert [type(n) for n in result["output"]["v"]] == [int, int, float, float, float]


NESTED = {**HEADER, "steps": [{"id": "outer", "uses": "parallel", "with": {
    "items": "{{ input.groups }}", "maxConcurrency": 10, "maxBranches": 20}, "steps": [
        {"id": "inner", "uses": "parallel", "with": {
            "items": "{{ item }}", "maxConcurrency": 10, "maxBranches": 10}, "steps": [
                {"id": "work", "uses": "tool.call", "with": {"tool": "echo"},
                 "input": {"v": "{{ item }}"}}]}]}]}


def test_concurrency_asked_multiplies_nested_groups() -> None:
    from lwtool.runtime.interpreter import concurrency_asked

    assert concurrency_asked(NESTED["steps"]) == 100
    assert concurrency_asked(CHAIN["steps"]) == 1
    capped = NESTED["steps"][0]["with"] | {"maxBranches": 3}
    assert concurrency_asked([{**NESTED["steps"][0], "with": capped}]) == 30


def test_a_world_that_runs_fewer_steps_than_asked_says_so(tmp_path: Path) -> None:
    (tmp_path / "nested.lwir.json").write_text(json.dumps(NESTED))
    (tmp_path / "in.json").write_text(json.dumps({"groups": [["a", "b"], ["c"]]}))
    (tmp_path / "tools.py").write_text("def echo(args):\n    return args\n\n"
                                       "tools = {'echo': echo}\n")
    tools = f"{tmp_path / 'tools.py'}:tools"
    for n, extra in enumerate(((), ("--max-concurrent-steps", "100"))):
        done = run_cli("run", str(tmp_path / "nested.lwir.json"), "--input",
                       str(tmp_path / "in.json"), "--data-dir", str(tmp_path / "data"),
                       "--tools", tools, "--run-id", f"r{n}", *extra)
        assert done.returncode == 0, done.stderr
        warned = ("warning: the workflow's parallel groups may run 100 steps at once; this "
                  "run takes at most 32 (raise it with --max-concurrent-steps)")
        assert (warned in done.stderr) is (not extra)
        events = run_cli("events", f"r{n}", "--data-dir", str(tmp_path / "data"), "--json",
                         "--type", "RunStarted")
        assert json.loads(events.stdout)["payload"]["stepConcurrency"] == {
            "asked": 100, "world": 100 if extra else 32}


def test_a_new_version_is_canonicalized_once_for_its_id_and_its_stored_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lwtool.canonical.jcs as jcs

    calls: list[int] = []
    real = jcs._plain

    def counted(value: Any) -> bool:  # every canonicalization passes here first
        if isinstance(value, dict) and value.get("kind") == "Workflow":  # the LWIR's
            calls.append(1)  # (not its record's: a few small objects, once a version)
        return real(value)

    monkeypatch.setattr(jcs, "_plain", counted)
    doc = {**CHAIN, "steps": CHAIN["steps"][:1]}
    world = LocalWorld(tmp_path / "data")
    result = asyncio.run(run_workflow(doc, {}, world=world, tools=_tools()))
    assert world.get_version(result["workflowVersionId"]) == doc  # stored and verified
    assert len(calls) == 1  # the Python API: lock_workflow
    cli_world = LocalWorld(tmp_path / "cli")
    calls.clear()
    asyncio.run(start_run(cli_world, doc, {}, _tools(), {}))  # `lwtool run`'s path
    assert len(calls) == 1


@pytest.mark.parametrize("shared", [False, True])
def test_a_loop_shared_by_runs_is_never_blocked_by_a_commit(tmp_path: Path,
                                                            shared: bool) -> None:
    """A chain alone on its loop commits on it (a thread hand-off would cost more than
    the commit); on a loop that executes several runs (`lwtool worker` sets
    LOOP_SHARED) every commit goes to the commit thread, so the others go on."""
    from lwtool.record.run_state import LOOP_SHARED

    threads: list[str] = []

    class Where(LocalWorld):
        def append(self, *args: Any, **kwargs: Any) -> Any:
            threads.append(threading.current_thread().name)
            return super().append(*args, **kwargs)

    async def main() -> Any:
        LOOP_SHARED.set(shared)
        return await start_run(Where(tmp_path / "data"), CHAIN, {}, _tools(), {})

    assert asyncio.run(main())["output"] == {"v": "a-b-c"}
    on_loop = [name == "MainThread" for name in threads]
    assert len(on_loop) >= 4 and all(on_loop) is not shared and any(on_loop) is not shared
