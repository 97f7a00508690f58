"""Runtime semantics through the Python API (real local world in a temp dir)."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, ToolRegistry, TransientError, run_workflow
from lwtool.runtime.api import replay_run
from tests.conftest import MINIMAL_HEADER, Worlds, permitted

# Every test here runs in both worlds, local and PostgreSQL (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("world_kind")


def _world(data_dir: Path, **options: Any) -> Any:
    return Worlds.current().world(data_dir, **options)

HERE = Path(__file__).parent


def lwir(steps: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return permitted({**copy.deepcopy(MINIMAL_HEADER), **top, "steps": steps})


def tool(step_id: str, name: str = "echo", **extra: Any) -> dict[str, Any]:
    return {"id": step_id, "uses": "tool.call", "with": {"tool": name}, **extra}


class Probe:
    """Tools that record calls and track how many run at once."""

    def __init__(self) -> None:
        self.calls: list[Any] = []
        self.active = 0
        self.peak = 0

    def registry(self) -> ToolRegistry:
        registry = ToolRegistry()

        async def echo(args: Any) -> Any:
            self.calls.append(args)
            return args

        async def slow(args: Any) -> Any:
            self.calls.append(args)
            self.active += 1
            self.peak = max(self.peak, self.active)
            await asyncio.sleep(0.02)
            self.active -= 1
            if isinstance(args, dict) and args.get("fail"):
                raise RuntimeError(f"{args['id']} failed")
            return {"id": args["id"]} if isinstance(args, dict) else args

        def boom(args: Any) -> Any:
            raise ValueError("the tool broke")

        def wrong(args: Any) -> Any:
            return {"nope": 1}

        registry.register("echo", echo)
        registry.register("slow", slow)
        registry.register("boom", boom)
        registry.register("wrong", wrong)
        return registry


def run(doc: dict[str, Any], run_input: Any, tmp_path: Path, probe: Probe | None = None,
        **kwargs: Any) -> dict[str, Any]:
    slots = kwargs.pop("slots", None)
    world = _world(tmp_path / "data", **({"max_concurrent_steps": slots} if slots else {}))
    tools = (probe or Probe()).registry()
    try:
        return asyncio.run(run_workflow(doc, run_input, world=world, tools=tools, **kwargs))
    finally:  # its pools closed here, not by the garbage collector on some other thread
        world.close()


def fails(doc: dict[str, Any], run_input: Any, tmp_path: Path,
          probe: Probe | None = None) -> RunFailedError:
    with pytest.raises(RunFailedError) as info:
        run(doc, run_input, tmp_path, probe)
    return info.value


def parallel(items: Any, body: list[dict[str, Any]], **with_: Any) -> dict[str, Any]:
    return {"id": "each", "uses": "parallel", "with": {
        "items": items, "maxBranches": 10, "maxConcurrency": 2, **with_}, "steps": body}


ITEMS = [{"id": "b", "n": 2}, {"id": "c", "n": 3}, {"id": "a", "n": 1}]


def test_step_input_rules(tmp_path: Path) -> None:
    doc = lwir([tool("x", input={"v": "{{ input.v }}"}),
                {"id": "y", "uses": "tool.call", "needs": ["x"],
                 "with": {"tool": "echo", "args": {"w": "{{ steps.x.output.v }}"}}},
                {"id": "z", "uses": "tool.call", "needs": ["y"], "with": {"tool": "echo"}}])
    probe = Probe()
    result = run(doc, {"v": 7}, tmp_path, probe)
    assert probe.calls == [{"v": 7}, {"w": 7}, {"v": 7}]
    assert result["output"] == {"v": 7}  # the last step's output is the run's


def test_fan_in_orders_and_output_step(tmp_path: Path) -> None:
    body = [tool("work", "slow"), tool("after", needs=["work"], input={"k": "{{ item.id }}"})]
    by_input = run(lwir([parallel("{{ input.items }}", body, itemKey="{{ item.id }}")]),
                   {"items": ITEMS}, tmp_path / "1")
    assert by_input["output"] == [{"k": "b"}, {"k": "c"}, {"k": "a"}]
    by_key = run(lwir([parallel("{{ input.items }}", body, itemKey="{{ item.id }}",
                                fanIn={"order": "itemKey", "output": "array",
                                       "outputStep": "work"})]), {"items": ITEMS}, tmp_path / "2")
    assert by_key["output"] == [{"id": "a"}, {"id": "b"}, {"id": "c"}]


def test_concurrency_is_bounded_by_group_and_world(tmp_path: Path) -> None:
    items = [{"id": f"i{n}"} for n in range(8)]
    probe = Probe()
    run(lwir([parallel("{{ input.items }}", [tool("work", "slow")], maxConcurrency=4)]),
        {"items": items}, tmp_path / "1", probe)
    assert probe.peak == 4
    probe = Probe()
    run(lwir([parallel("{{ input.items }}", [tool("work", "slow")], maxConcurrency=4)]),
        {"items": items}, tmp_path / "2", probe, slots=2)
    assert probe.peak == 2
    probe = Probe()  # the default world does not undercut the schema's largest group
    many = [{"id": f"i{n}"} for n in range(10)]
    run(lwir([parallel("{{ input.items }}", [tool("work", "slow")], maxConcurrency=10)]),
        {"items": many}, tmp_path / "3", probe)
    assert probe.peak == 10


def test_fail_fast_and_all_settled(tmp_path: Path) -> None:
    items = [{"id": "ok1"}, {"id": "bad", "fail": True}, {"id": "ok2"}, {"id": "bad2",
                                                                     "fail": True}]
    body = [tool("work", "slow")]
    error = fails(lwir([parallel("{{ input.items }}", body, itemKey="{{ item.id }}",
                                 failureMode="fail_fast", maxConcurrency=1)]),
                  {"items": items}, tmp_path / "1")
    assert error.cause_code == "step_failed" and error.failed_step_path == "each[bad].work"
    probe = Probe()
    world = _world(tmp_path / "2")
    doc = lwir([parallel("{{ input.items }}", body, itemKey="{{ item.id }}",
                         failureMode="all_settled", maxConcurrency=1)])
    result = asyncio.run(run_workflow(doc, {"items": items}, world=world,
                                      tools=probe.registry()))
    assert [c["id"] for c in probe.calls] == ["ok1", "bad", "ok2", "bad2"]
    assert result["output"] == [{"id": "ok1"}, {"id": "ok2"}]  # the branches that succeeded
    group = next(e for e in world.events(result["runId"], ["StepCompleted"])
                 if e.step_path == "each")
    assert group.payload["branches"] == ["ok1", "ok2"]
    assert group.payload["failedBranches"] == [
        {"itemKey": "bad", "causeCode": "step_failed", "failedStepPath": "each[bad].work",
         "message": "tool 'slow' raised RuntimeError: bad failed (at "
                    "tests/runtime/test_semantics.py:56 in slow)"},
        {"itemKey": "bad2", "causeCode": "step_failed", "failedStepPath": "each[bad2].work",
         "message": "tool 'slow' raised RuntimeError: bad2 failed (at "
                    "tests/runtime/test_semantics.py:56 in slow)"}]


def test_all_settled_fails_only_when_no_branch_succeeded(tmp_path: Path) -> None:
    items = [{"id": "x", "fail": True}, {"id": "y", "fail": True}]
    error = fails(lwir([parallel("{{ input.items }}", [tool("work", "slow")],
                                 itemKey="{{ item.id }}", failureMode="all_settled")]),
                  {"items": items}, tmp_path)
    assert error.cause_code == "step_failed" and error.failed_step_path == "each[x].work"
    assert "each[x].work" in error.message and "each[y].work" in error.message


def _visit_loop(**with_: Any) -> dict[str, Any]:
    """A branch loop that never passes: it runs out of visits."""
    body = [tool("work", maxVisits=2, input="{{ item }}"),
            {"id": "route", "uses": "decision", "needs": ["work"],
             "with": {"cases": [{"when": "{{ steps.work.lastOutput.done }}", "to": "end"}],
                      "default": "work"}}]
    return lwir([parallel("{{ input.items }}", body, itemKey="{{ item.id }}", **with_)])


@pytest.mark.parametrize("mode", ["fail_fast", "all_settled"])
def test_a_branch_out_of_visits_fails_with_max_visits_exceeded(tmp_path: Path,
                                                               mode: str) -> None:
    error = fails(_visit_loop(failureMode=mode), {"items": [{"id": "a"}]}, tmp_path)
    assert error.cause_code == "max_visits_exceeded"
    assert error.failed_step_path == "each[a].work.visit[2]"


def test_all_settled_lists_a_branch_out_of_visits(tmp_path: Path) -> None:
    world = _world(tmp_path / "data")
    items = [{"id": "a"}, {"id": "b", "done": True}]
    result = asyncio.run(run_workflow(_visit_loop(failureMode="all_settled"),
                                      {"items": items}, world=world, tools=Probe().registry()))
    assert result["output"] == [{"id": "b", "done": True}]
    group = next(e for e in world.events(result["runId"], ["StepCompleted"])
                 if e.step_path == "each")
    assert [(f["itemKey"], f["causeCode"], f["failedStepPath"])
            for f in group.payload["failedBranches"]] == [
        ("a", "max_visits_exceeded", "each[a].work.visit[2]")]


def test_a_decision_on_a_loop_needs_no_max_visits(tmp_path: Path) -> None:
    """The spec's worked example: the decision has no maxVisits, runs once per round,
    and its rounds get distinct paths (`route.visit[N]`)."""
    world = _world(tmp_path / "data")
    calls: list[Any] = []

    def count(args: Any) -> Any:
        calls.append(args)
        return {"done": len(calls) >= 3}

    doc = lwir([tool("work", "count", maxVisits=5, input="x"),
                {"id": "route", "uses": "decision", "needs": ["work"],
                 "with": {"cases": [{"when": "{{ steps.work.lastOutput.done }}", "to": "end"}],
                          "default": "work"}}])
    result = asyncio.run(run_workflow(doc, {}, world=world, tools={"count": count}))
    assert result["output"] == {"done": True}
    paths = [e.step_path for e in world.events(result["runId"], ["StepCompleted"])]
    assert paths == ["work.visit[0]", "route.visit[0]", "work.visit[1]", "route.visit[1]",
                     "work.visit[2]", "route.visit[2]"]


def test_steps_after_a_loop_exit_run_once_the_exit_is_chosen(tmp_path: Path) -> None:
    world = _world(tmp_path / "data")
    rounds: list[Any] = []

    def count(args: Any) -> Any:
        rounds.append(args)
        return {"done": len(rounds) >= 2}

    doc = lwir([tool("work", "count", maxVisits=3, input="x"),
                {"id": "route", "uses": "decision", "needs": ["work"],
                 "with": {"cases": [{"when": "{{ steps.work.lastOutput.done }}", "to": "out"}],
                          "default": "work"}},
                tool("out", input="out"), tool("after", needs=["out"], input="after")])
    def echo(args: Any) -> Any:
        return args

    result = asyncio.run(run_workflow(doc, {}, world=world,
                                      tools={"count": count, "echo": echo}))
    assert result["output"] == "after"
    events = world.events(result["runId"])
    assert [e.step_path for e in events if e.type == "StepCompleted"][-2:] == ["out", "after"]
    assert not [e for e in events if e.type == "StepSkipped"]


def test_too_many_items_and_duplicate_keys(tmp_path: Path) -> None:
    doc = lwir([parallel("{{ input.items }}", [tool("work")], maxBranches=2)])
    assert "more than maxBranches" in fails(doc, {"items": ITEMS}, tmp_path / "1").message
    doc = lwir([parallel("{{ input.items }}", [tool("work")], itemKey="{{ item.n > 1 }}")])
    assert "unique" in fails(doc, {"items": ITEMS}, tmp_path / "2").message


def test_unchosen_decision_target_is_skipped(tmp_path: Path) -> None:
    doc = lwir([
        tool("check", input={"ok": "{{ input.ok }}"}),
        {"id": "route", "uses": "decision", "needs": ["check"], "with": {
            "cases": [{"when": "{{ steps.check.output.ok }}", "to": "yes"}], "default": "no"}},
        tool("yes", input="yes"), tool("no", input="no"),
        tool("after-no", needs=["no"], input="after-no"),
    ])
    world = _world(tmp_path / "data")
    result = asyncio.run(run_workflow(doc, {"ok": True}, world=world, tools=Probe().registry()))
    assert result["output"] == "yes"
    skipped = [e.step_path for e in world.events(result["runId"]) if e.type == "StepSkipped"]
    assert skipped == ["no", "after-no"]


def test_max_visits_exceeded(tmp_path: Path) -> None:
    doc = lwir([tool("work", maxVisits=2, input="x"),
                {"id": "again", "uses": "decision", "needs": ["work"], "maxVisits": 2,
                 "with": {"cases": [], "default": "work"}}])
    error = fails(doc, {}, tmp_path)
    assert error.cause_code == "max_visits_exceeded"
    assert error.failed_step_path == "work.visit[2]"


def test_failures_carry_cause_and_path(tmp_path: Path) -> None:
    schema = {"schema": {"type": "object", "required": ["v"]}}
    assert fails(lwir([tool("x")], input=schema), {}, tmp_path / "1").cause_code == \
        "input_schema_error"
    error = fails(lwir([tool("x", "boom")]), {}, tmp_path / "2")
    assert (error.cause_code, error.failed_step_path) == ("step_failed", "x")
    assert "ValueError: the tool broke" in error.message
    error = fails(lwir([tool("x", "wrong", output={"mode": "object", "schema": {
        "type": "object", "required": ["v"]}})]), {}, tmp_path / "3")
    assert (error.cause_code, error.failed_step_path) == ("step_schema_error", "x")
    from lwtool.tools import MissingTools

    with pytest.raises(MissingTools, match="calls tool 'missing-tool' that is not provided"):
        fails(lwir([tool("x", "missing-tool")]), {}, tmp_path / "4")  # before it starts
    error = fails(lwir([tool("x")], output={"schema": {"type": "string"}}), {"a": 1},
                  tmp_path / "5")
    assert error.cause_code == "step_schema_error"


def test_transient_errors_are_retried_by_policy(tmp_path: Path) -> None:
    attempts: list[int] = []

    def flaky(args: Any) -> Any:
        attempts.append(1)
        if len(attempts) < 3:
            raise TransientError("429")
        return "ok"

    world = _world(tmp_path / "data")
    doc = lwir([tool("x", "flaky", retry={"maxAttempts": 3, "backoffMs": 1})])
    result = asyncio.run(run_workflow(doc, {}, world=world, tools={"flaky": flaky}))
    assert result["output"] == "ok" and len(attempts) == 3
    failed = [e for e in world.events(result["runId"]) if e.type == "StepAttemptFailed"]
    assert [e.payload["attempt"] for e in failed] == [1, 2]
    attempts.clear()
    doc = lwir([tool("x", "flaky", retry={"maxAttempts": 2, "backoffMs": 1})])
    with pytest.raises(RunFailedError):
        asyncio.run(run_workflow(doc, {}, world=world, tools={"flaky": flaky}))


def test_replay_of_a_finished_run_calls_nothing(tmp_path: Path) -> None:
    probe = Probe()
    world = _world(tmp_path / "data")
    doc = lwir([tool("x", input={"v": 1})])
    first = asyncio.run(run_workflow(doc, {}, world=world, tools=probe.registry()))
    again = asyncio.run(replay_run(first["runId"], world=world, tools=probe.registry()))
    assert again == first and len(probe.calls) == 1
    same_id = asyncio.run(run_workflow(doc, {}, world=world, tools=probe.registry(),
                                       run_id=first["runId"]))
    assert same_id == first and len(probe.calls) == 1


def test_code_run_example_runs_in_the_sandbox(tmp_path: Path) -> None:
    from lwtool.runtime.api import load_lwir

    doc = load_lwir(HERE.parent.parent / "examples" / "filter-candidates.lwir.json")
    result = asyncio.run(run_workflow(doc, {"jobId": "j1"}, world=_world(tmp_path),
                                      tools={"fetchCandidates": lambda args: [
                                          {"id": "x", "score": 0.95}, {"id": "y", "score": 0.2}]}))
    assert result["output"] == [{"id": "x", "score": 0.95}]


def test_large_outputs_live_only_behind_output_ref(tmp_path: Path) -> None:
    big = "x" * (300 * 1024)

    def produce(args: Any) -> Any:
        return {"blob": big}

    world = _world(tmp_path / "data")
    doc = lwir([tool("make", "produce"), tool("size", "measure", needs=["make"],
                                              input={"n": "{{ length(steps.make.output.blob) }}"})])
    tools = {"produce": produce, "measure": lambda args: args}
    result = asyncio.run(run_workflow(doc, {}, world=world, tools=tools))
    assert result["output"] == {"n": len(big)}
    completed = next(e for e in world.events(result["runId"]) if e.step_path == "make"
                     and e.type == "StepCompleted")
    envelope = completed.payload["envelope"]
    assert "output" not in envelope and envelope["outputRef"].startswith("artifact://sha256:")
    if Worlds.current().kind == "local":  # the local world keeps a large one as a file
        files = list((tmp_path / "data" / "artifacts").rglob("*"))
        assert any(f.is_file() and f.stat().st_size > 300 * 1024 for f in files)
    # replay reads the output back from the artifact
    again = asyncio.run(replay_run(result["runId"], world=world, tools=tools))
    assert again["output"] == result["output"]


def test_sync_tools_get_as_many_threads_as_the_world_allows(tmp_path: Path) -> None:
    import threading
    import time as _time

    lock = threading.Lock()
    state = {"active": 0, "peak": 0}
    # All eight wait for each other (not a 0.1 s sleep, which a loaded machine's slow
    # thread starts made a race): with fewer threads the barrier breaks and the run fails.
    together = threading.Barrier(8, timeout=30)

    def blocking(args: Any) -> Any:
        with lock:
            state["active"] += 1
            state["peak"] = max(state["peak"], state["active"])
        together.wait()
        _time.sleep(0.01)
        with lock:
            state["active"] -= 1
        return args

    items = [{"id": f"i{n}"} for n in range(8)]
    doc = lwir([parallel("{{ input.items }}", [tool("work", "blocking")], maxConcurrency=8)])
    world = _world(tmp_path / "data", max_concurrent_steps=8)
    asyncio.run(run_workflow(doc, {"items": items}, world=world, tools={"blocking": blocking}))
    assert state["peak"] == 8  # the default thread pool on a 2-core machine would cap at 6


def test_a_step_after_a_loop_runs_once_when_the_loop_is_left(tmp_path: Path) -> None:
    rounds: list[int] = []

    def work(args: Any) -> Any:
        rounds.append(1)
        return {"n": len(rounds)}

    doc = lwir([
        tool("work", "work", maxVisits=3, input="x"),
        {"id": "again", "uses": "decision", "needs": ["work"], "maxVisits": 3,
         "with": {"cases": [{"when": "{{ steps.work.lastOutput.n >= 3 }}", "to": "done"}],
                  "default": "work"}},
        tool("done", "echo", input="finished"),
        tool("summary", "echo", needs=["work"],
             input={"rounds": "{{ length(steps.work.allVisits) }}"}),
    ])
    world = _world(tmp_path / "data")
    result = asyncio.run(run_workflow(doc, {}, world=world, tools={"work": work,
                                                                   "echo": lambda a: a}))
    summaries = [e for e in world.events(result["runId"])
                 if e.type == "StepCompleted" and e.payload["stepId"] == "summary"]
    assert len(summaries) == 1 and summaries[0].payload["envelope"]["output"] == {"rounds": 3}


def test_an_invalid_dict_is_refused_with_findings(tmp_path: Path) -> None:
    from lwtool import WorkflowInvalid

    doc = lwir([tool("a", maxVisits=0)])
    with pytest.raises(WorkflowInvalid) as info:
        run(doc, {}, tmp_path)
    assert [f.code for f in info.value.findings] == ["step.max_visits_out_of_range"]


def test_a_tool_outside_permissions_is_refused_at_validation_and_at_run_time(
        tmp_path: Path) -> None:
    from lwtool import WorkflowInvalid
    from lwtool.runtime.interpreter import start_run

    doc = {**copy.deepcopy(MINIMAL_HEADER), "steps": [tool("x", "echo", input="hi")]}
    doc["permissions"]["tools"] = ["other"]
    probe = Probe()
    with pytest.raises(WorkflowInvalid) as invalid:
        run(doc, {}, tmp_path / "1", probe)
    assert [f.code for f in invalid.value.findings] == ["permissions.unknown_tool"]
    # A version that got past validation some other way is still refused, uncalled.
    world = _world(tmp_path / "2")
    with pytest.raises(RunFailedError) as failed:
        asyncio.run(start_run(world, doc, {}, probe.registry(), {}))
    assert (failed.value.cause_code, failed.value.failed_step_path) == ("capability_drift", "x")
    assert "permissions.tools" in failed.value.message and probe.calls == []


def test_a_tool_value_is_normalized_so_replay_sees_the_same(tmp_path: Path) -> None:
    """A tuple is a list both live and after replay (it was one value live and another
    read back from the log)."""
    doc = lwir([tool("p", "pair"), tool("use", needs=["p"], input="{{ steps.p.output[0] }}")])
    world = _world(tmp_path / "data")
    tools = {"pair": lambda args: ("first", "second"), "echo": lambda args: args}
    result = asyncio.run(run_workflow(doc, {}, world=world, tools=tools))
    assert result["output"] == "first"
    assert asyncio.run(replay_run(result["runId"], world=world, tools=tools))["output"] == \
        "first"


@pytest.mark.parametrize(("value", "needle"), [
    ({0: "first"}, "the key 0 is a int"),
    (b"bytes", "a bytes is not a JSON value"),
    ({"x": float("nan")}, "nan has no JSON form"),
    ({"n": 2**64}, "beyond ±2**53"),
])
def test_a_non_json_tool_value_fails_the_run(tmp_path: Path, value: Any, needle: str) -> None:
    world = _world(tmp_path / "data")
    calls: list[Any] = []

    def bad(args: Any) -> Any:
        calls.append(args)
        return value

    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(lwir([tool("p", "bad")]), {}, world=world,
                                 tools={"bad": bad}, run_id="run_bad"))
    assert info.value.cause_code == "step_schema_error" and needle in info.value.message
    assert world.get_run("run_bad").status == "failed"
    with pytest.raises(RunFailedError):  # a replay reports it, calling nothing
        asyncio.run(replay_run("run_bad", world=world, tools={"bad": bad}))
    assert len(calls) == 1


def test_a_step_over_the_timeout_fails_with_timeout_after_its_retries(tmp_path: Path) -> None:
    calls: list[Any] = []

    async def hang(args: Any) -> Any:
        calls.append(args)
        await asyncio.sleep(30)

    world = _world(tmp_path / "data")
    doc = lwir([tool("x", "hang", retry={"maxAttempts": 2, "backoffMs": 0})])
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(doc, {}, world=world, tools={"hang": hang},
                                 step_timeout=0.2, run_id="run_slow"))
    assert (info.value.cause_code, info.value.failed_step_path) == ("timeout", "x")
    assert "longer than 0.2 s" in info.value.message and len(calls) == 2
    failed = world.events("run_slow", ["StepAttemptFailed"])
    assert [(e.payload["causeCode"], e.payload["final"]) for e in failed] == [
        ("timeout", False), ("timeout", True)]
    assert world.events("run_slow", ["RunStarted"])[0].payload["stepTimeoutS"] == 0.2


def test_a_steps_timeout_ms_overrides_the_runs_step_timeout(tmp_path: Path) -> None:
    async def nap(args: Any) -> Any:
        await asyncio.sleep(args["s"])
        return args["s"]

    world = _world(tmp_path / "data")
    doc = lwir([tool("short", "nap", input={"s": 5}, timeoutMs=200, retry={"maxAttempts": 1}),
                tool("long", "nap", input={"s": 0.5}, timeoutMs=5000, needs=["short"])])
    with pytest.raises(RunFailedError) as info:  # the run's 30 s would have let it finish
        asyncio.run(run_workflow(doc, {}, world=world, tools={"nap": nap}, step_timeout=30))
    assert info.value.failed_step_path == "short"
    assert "longer than 0.2 s (the step's timeoutMs)" in info.value.message
    doc["steps"][0]["input"]["s"] = 0
    result = asyncio.run(run_workflow(doc, {}, world=world, tools={"nap": nap},
                                      step_timeout=0.1))  # the step's 5 s wins over 0.1
    assert result["output"] == 0.5


def test_a_step_within_the_timeout_is_unaffected(tmp_path: Path) -> None:
    async def quick(args: Any) -> Any:
        await asyncio.sleep(0.01)
        return "done"

    result = asyncio.run(run_workflow(lwir([tool("x", "quick")]), {},
                                      world=_world(tmp_path / "data"),
                                      tools={"quick": quick}, step_timeout=5))
    assert result["output"] == "done"


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt()])
@pytest.mark.parametrize("is_async", [False, True])
def test_a_tool_raising_system_exit_fails_its_step(tmp_path: Path, raised: BaseException,
                                                   is_async: bool) -> None:
    def sync_tool(args: Any) -> Any:
        raise raised

    async def async_tool(args: Any) -> Any:
        raise raised

    world = _world(tmp_path / "data")
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(lwir([tool("x", "quit")]), {}, world=world,
                                 tools={"quit": async_tool if is_async else sync_tool},
                                 run_id="run_quit"))
    assert info.value.cause_code == "step_failed"
    assert type(raised).__name__ in info.value.message
    assert world.get_run("run_quit").status == "failed"


@pytest.mark.parametrize("is_async", [False, True])
def test_a_tool_calling_os_exit_fails_its_step_and_the_process_lives(tmp_path: Path,
                                                                     is_async: bool) -> None:
    """Without the guard, os._exit ends this very test process (pytest reports a crash)."""
    import os

    def sync_tool(args: Any) -> Any:
        os._exit(7)

    async def async_tool(args: Any) -> Any:
        os._exit(7)

    world = _world(tmp_path / "data")
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(lwir([tool("x", "bye")]), {}, world=world,
                                 tools={"bye": async_tool if is_async else sync_tool},
                                 run_id="run_bye"))
    assert info.value.cause_code == "step_failed"
    assert "the tool called os._exit(7)" in info.value.message
    assert world.get_run("run_bye").status == "failed"
    assert os._exit.__name__ == "_exit"  # restored once no tool runs


def test_a_forked_child_of_a_tool_still_exits_for_real(tmp_path: Path) -> None:
    """A child's os._exit is its own (else the child would go on running the run)."""
    import os

    def forking(args: Any) -> Any:
        pid = os.fork()
        if pid == 0:
            os._exit(5)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    result = asyncio.run(run_workflow(lwir([tool("x", "forking")]), {},
                                      world=_world(tmp_path / "data"),
                                      tools={"forking": forking}))
    assert result["output"] == 5
