"""An answer given while the run executes its other steps (`lwtool respond` to a run a
process holds): it is committed at once, and the run goes on with it instead of
stopping to wait; nothing committed is called again. The two moments around the run's
stop are covered in this process: an answer committed just before the run marks itself
`waiting` is still seen, and one refused because the run is `waiting` already is given
to the waiting run once its process has let go of it. In the local world and in
PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Worlds
from tests.runtime.cli_runs import calls, events, lwtool

MEANWHILE = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: meanwhile}
permissions: {tools: [step, gate]}
steps:
  - id: ask
    uses: human.input
    with: {prompt: "Ship {{ input.v }}?", schema: {type: boolean}}
  - {id: slow, uses: tool.call, with: {tool: gate, args: {name: slow}}}
  - id: after
    uses: tool.call
    needs: [ask, slow]
    with: {tool: step, args: {name: after, value: "{{ steps.ask.output }}"}}
"""

# `gate` logs its call, says it started (a file), then waits for `open-gate` to appear
# (with `block: false` it returns at once).
TOOLS = '''\
import os, time
from pathlib import Path

here = Path(os.environ["LWTOOL_TEST_DIR"])

def log(name):
    with open(here / "calls.log", "a") as out:
        out.write(name + "\\n")

def gate(args):
    log(args["name"])
    if not args.get("block", True):
        return {"value": "passed"}
    (here / "gate-started").touch()
    while not (here / "open-gate").exists():
        time.sleep(0.02)
    return {"value": "opened"}

def step(args):
    log(args["name"])
    return {"value": f"{args['value']}-{args['name']}"}

tools = {"step": step, "gate": gate}
'''


BRANCHES = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: branches-meanwhile}
permissions: {tools: [step, gate]}
steps:
  - id: fan
    uses: parallel
    with: {items: [x, y], maxBranches: 2, maxConcurrency: 2, fanIn: {outputStep: b}}
    steps:
      - id: ask
        uses: human.input
        with: {prompt: "Ship {{ item }}?", schema: {type: boolean}}
      - id: hold
        uses: tool.call
        with: {tool: gate, args: {name: "hold{{ item }}", block: "{{ item == 'y' }}"}}
      - id: b
        uses: tool.call
        needs: [ask]
        with: {tool: step, args: {name: "b{{ item }}", value: "{{ steps.ask.output }}"}}
"""


@pytest.fixture()
def folder(tmp_path: Path, world_kind: str) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "meanwhile.lwir.yaml").write_text(MEANWHILE)
    (tmp_path / "branches.lwir.yaml").write_text(BRANCHES)
    (tmp_path / "in.json").write_text('{"v": "it"}')
    (tmp_path / "yes.json").write_text("true")
    return tmp_path


def _until(check: Any, what: str, seconds: float = 60) -> None:
    until = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < until, f"timed out waiting for {what}"
        time.sleep(0.05)


def _start(folder: Path, workflow: str, run_id: str, **env: str) -> subprocess.Popen[str]:
    """`lwtool run WORKFLOW` as run `run_id`, in the background (stdout: its --json)."""
    full = {**os.environ, **Worlds.current().env(folder / "data"),
            "LWTOOL_TEST_DIR": str(folder), **env}
    return subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", workflow, "-i", "in.json", "--tools",
         "tools.py:tools", "--run-id", run_id, "--data-dir", "data", "--json"],
        cwd=folder, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_answered_steps_go_on_at_once_while_the_rest_still_runs(folder: Path) -> None:
    """Branch x waits with nothing else of its own to run, while branch y's `hold`
    holds the run: each answer sets its branch going at once (its `b` runs while
    `hold` still holds), not when the run would stop."""
    running = _start(folder, "branches.lwir.yaml", "f")
    try:
        _until(lambda: (folder / "gate-started").exists(), "hold y to start")
        _until(lambda: [e["type"] for e in events(folder, "f")].count(
            "HumanInputRequested") == 2, "the two requests")
        for key in ("x", "y"):
            index = "xy".index(key)
            answered = lwtool(folder, "respond", "f", f"fan[{index}].ask", "--input",
                              "yes.json")
            assert answered.returncode == 0, answered.stderr
            _until(lambda: f"b{key}" in calls(folder), f"b{key} to run")  # noqa: B023
        assert running.poll() is None and not (folder / "open-gate").exists()
        (folder / "open-gate").touch()
        out, err = running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 0, err
    assert json.loads(out)["output"] == [{"value": "True-bx"}, {"value": "True-by"}]
    assert "RunWaiting" not in [e["type"] for e in events(folder, "f")]
    assert calls(folder) == {"holdx": 1, "holdy": 1, "bx": 1, "by": 1}


def test_a_branch_killed_as_it_goes_on_replays_to_the_same_output(folder: Path) -> None:
    """SIGKILLed right after branch x's `b` committed (x answered while `hold y` held
    the run): the replay ends as the uninterrupted run does; `bx` is not called again
    (`hold y`, in flight at the kill, is: at least once)."""
    running = _start(folder, "branches.lwir.yaml", "k",
                     LWTOOL_FAULT_KILL_AFTER="StepCompleted@fan[[]0].b")
    try:
        _until(lambda: [e["type"] for e in events(folder, "k")].count(
            "HumanInputRequested") == 2, "the two requests")
        assert lwtool(folder, "respond", "k", "fan[0].ask", "--input",
                      "yes.json").returncode == 0
        assert running.wait(timeout=60) == -9
    finally:
        if running.poll() is None:
            running.kill()
    (folder / "open-gate").touch()
    assert lwtool(folder, "respond", "k", "fan[1].ask", "--input", "yes.json").returncode == 0
    done = lwtool(folder, "replay", "k", "--tools", "tools.py:tools", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == [{"value": "True-bx"}, {"value": "True-by"}]
    counted = calls(folder)
    assert (counted["holdx"], counted["bx"], counted["by"]) == (1, 1, 1), counted


def _answered_meanwhile(folder: Path, **env: str) -> tuple[int, str, str]:
    """Run `meanwhile` as run `m`; answer `ask` while `slow` holds the run, then let
    `slow` end; the run's exit code, stdout and stderr."""
    running = _start(folder, "meanwhile.lwir.yaml", "m", **env)
    try:
        _until(lambda: (folder / "gate-started").exists(), "the slow step to start")
        _until(lambda: "HumanInputRequested" in [e["type"] for e in events(folder, "m")],
               "the request")
        listed = lwtool(folder, "runs")
        assert "waits for input at ask: Ship it?" in listed.stdout
        assert "m is executing and waits for a person meanwhile; answer: lwtool respond m " \
            "ask" in listed.stdout
        assert [r["waitingFor"][0]["stepPath"] for r in json.loads(
            lwtool(folder, "runs", "--json").stdout)] == ["ask"]
        answered = lwtool(folder, "respond", "m", "ask", "--input", "yes.json", "--json")
        assert answered.returncode == 0, answered.stderr
        assert "run m is executing: it goes on with the answer itself" in answered.stderr
        assert json.loads(answered.stdout)["executing"] is True
        assert running.poll() is None  # still executing `slow`
        (folder / "open-gate").touch()
        out, err = running.communicate(timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
    return running.returncode, out, err


def test_an_answer_given_while_the_run_executes_is_taken_up_without_stopping(
        folder: Path) -> None:
    code, out, err = _answered_meanwhile(folder)
    assert code == 0, err
    assert json.loads(out)["output"] == {"value": "True-after"}
    types = [e["type"] for e in events(folder, "m")]
    assert "RunWaiting" not in types and types[-1] == "RunCompleted"
    assert types.count("HumanInputReceived") == 1
    assert calls(folder) == {"slow": 1, "after": 1}
    twice = lwtool(folder, "respond", "m", "ask", "--input", "yes.json")
    assert twice.returncode == 2 and "has completed" in twice.stderr
    assert lwtool(folder, "verify").returncode == 0


def test_a_run_killed_as_it_goes_on_with_the_answer_replays_to_the_same_output(
        folder: Path) -> None:
    """SIGKILLed right after the answered step committed (it went on at once, `slow`
    still held): the replay ends as the uninterrupted run does; the answered step is
    not executed again, `slow` (in flight at the kill) is: at least once."""
    running = _start(folder, "meanwhile.lwir.yaml", "m",
                     LWTOOL_FAULT_KILL_AFTER="StepCompleted@ask")
    try:
        _until(lambda: (folder / "gate-started").exists(), "the slow step to start")
        _until(lambda: "HumanInputRequested" in [e["type"] for e in events(folder, "m")],
               "the request")
        answered = lwtool(folder, "respond", "m", "ask", "--input", "yes.json")
        assert answered.returncode == 0, answered.stderr
        assert running.wait(timeout=60) == -9  # before the gate opens
    finally:
        if running.poll() is None:
            running.kill()
    (folder / "open-gate").touch()
    done = lwtool(folder, "replay", "m", "--tools", "tools.py:tools", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"value": "True-after"}
    assert calls(folder) == {"slow": 2, "after": 1}
    completed = [e["stepPath"] for e in events(folder, "m") if e["type"] == "StepCompleted"]
    assert sorted(completed) == ["after", "ask", "slow"]


class _Around:
    """The run's world, doing `before(run_id)` just before the run commits RunWaiting
    and `after(run_id)` just after."""

    def __init__(self, world: Any, before: Any = None, after: Any = None) -> None:
        self.world, self.before, self.after = world, before, after

    def append(self, run_id: str, events: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
        waits = any(e.type == "RunWaiting" for e in events)
        if waits and self.before:
            self.before(run_id)
        committed = self.world.append(run_id, events, *args, **kwargs)
        if waits and self.after:
            self.after(run_id)
        return committed

    def __getattr__(self, name: str) -> Any:
        return getattr(self.world, name)


def _workflow(folder: Path) -> Any:
    import lwtool

    (folder / "small.lwir.yaml").write_text("""\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: small}
permissions: {tools: [step]}
steps:
  - id: ask
    uses: human.input
    with: {prompt: "Go?", schema: {type: boolean}}
  - id: after
    uses: tool.call
    needs: [ask]
    with: {tool: step, args: {v: "{{ steps.ask.output }}"}}
""")
    return lwtool.lock_workflow(folder / "small.lwir.yaml")


TOOLS_API = {"step": lambda args: {"v": args["v"]}}


def test_an_answer_committed_as_the_run_stops_is_still_seen(folder: Path) -> None:
    """Committed after the run's first look and before its RunWaiting: the run looks
    again once it is `waiting`, and goes on."""
    import lwtool
    from lwtool.runtime.respond import respond

    world = Worlds.current().world(folder / "data")
    other = Worlds.current().world(folder / "data")  # another process's connection
    said: list[dict[str, Any]] = []
    try:
        around = _Around(world, before=lambda run_id: said.append(
            respond(other, run_id, "ask", True)))
        result = asyncio.run(lwtool.run_workflow(_workflow(folder), {}, world=around,
                                                 tools=TOOLS_API, run_id="s"))
        assert said[0]["executing"] is True
        assert result["output"] == {"v": True}
        types = [e.type for e in world.events("s")]
        # it marked itself waiting, saw the answer, and went on
        assert types.count("RunWaiting") == 1 and types[-1] == "RunCompleted"
        assert world.get_run("s").status == "completed"
    finally:
        other.close()
        world.close()


def test_an_answer_refused_as_the_run_stops_waits_for_it_to_let_go(folder: Path) -> None:
    """Given once the run is `waiting` but still holds its lock: not committed to it
    then (the run would not look again), but as soon as the run has let go."""
    import lwtool
    from lwtool.runtime.respond import respond

    world = Worlds.current().world(folder / "data")
    other = Worlds.current().world(folder / "data")
    said: list[dict[str, Any]] = []
    answering: list[threading.Thread] = []

    def answer_later(run_id: str) -> None:
        thread = threading.Thread(target=lambda: said.append(respond(other, run_id, "ask",
                                                                     True)))
        thread.start()
        answering.append(thread)
        time.sleep(0.5)  # the answer meets a `waiting` run this process still holds

    try:
        with pytest.raises(lwtool.RunWaitingError):
            asyncio.run(lwtool.run_workflow(_workflow(folder), {}, world=_Around(
                world, after=answer_later), tools=TOOLS_API, run_id="w"))
        answering[0].join(timeout=30)
        assert said and said[0]["executing"] is False
        assert world.get_run("w").status == "waiting"
        result = asyncio.run(lwtool.replay_run("w", world=world, tools=TOOLS_API))
        assert result["output"] == {"v": True}
    finally:
        other.close()
        world.close()


def test_answers_to_one_run_are_given_one_at_a_time(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Answers to a run killed while it waited for one (status `running`, nobody holding
    it): one takes the run's lock, the others find it held, as if the run executed. Only
    one may be committed; the others are refused as answered already."""
    from lwtool.record.journal import Journal
    from lwtool.runtime import respond as answers

    killed = lwtool(folder, "run", "meanwhile.lwir.yaml", "-i", "in.json", "--tools",
                    "tools.py:tools", "--run-id", "k",
                    LWTOOL_FAULT_KILL_AFTER="HumanInputRequested@ask")
    assert killed.returncode == -9, killed.stderr
    read = Journal.from_events

    def slowly(events: Any) -> Any:  # each answer reads the log for a while
        time.sleep(0.3)
        return read(events)

    monkeypatch.setattr(answers.Journal, "from_events", staticmethod(slowly))
    outcomes: list[Any] = []

    def give() -> None:
        answering = Worlds.current().world(folder / "data")
        try:
            outcomes.append(answers.respond(answering, "k", "ask", True))
        except answers.NotWaiting as exc:
            outcomes.append(exc)
        finally:
            answering.close()

    threads = [threading.Thread(target=give) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sum(isinstance(o, dict) for o in outcomes) == 1, outcomes
    assert all("answered already" in str(o) for o in outcomes if not isinstance(o, dict))
    assert [e["type"] for e in events(folder, "k")].count("HumanInputReceived") == 1


def test_a_sub_runs_requests_are_not_looked_for_in_the_pipelines_log() -> None:
    """A pipeline step passes up its sub-runs' requests (`runId`): their answers are in
    the sub-runs' logs, so the pipeline's own look ignores them (an answer in its own
    log at the same step path must not wake that step again and again)."""
    from lwtool.runtime.answers import paths_of

    requests = [{"stepPath": "ask"}, {"stepPath": "ask", "runId": "sub"},
                {"stepPath": "fan[0].ask", "runId": "me"}]
    assert paths_of(requests, "me") == {"ask", "fan[0].ask"}
    assert paths_of(requests[1:2], "me") == frozenset()


@pytest.mark.parametrize("mode", ["fail_fast", "all_settled"])
def test_a_waiting_branch_does_not_hold_up_a_sibling_failure(tmp_path: Path,
                                                            mode: str) -> None:
    """Branch x waits for an answer (parked while y executes); y fails. fail_fast: the
    group fails at once, x's wait cancelled; all_settled: x gives up once y has
    settled and the run stops to wait, as before answers could come meanwhile."""
    import lwtool
    from lwtool.world.local import LocalWorld

    (tmp_path / "wf.lwir.yaml").write_text(f"""\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {{name: fails}}
permissions: {{tools: [step]}}
steps:
  - id: fan
    uses: parallel
    with: {{items: [x, y], maxBranches: 2, maxConcurrency: 2, failureMode: {mode}}}
    steps:
      - id: ask
        uses: human.input
        with: {{prompt: "ok?", schema: {{type: boolean}}}}
      - id: work
        uses: tool.call
        with: {{tool: step, args: {{v: "{{{{ item }}}}"}}}}
""")

    async def step(args: Any) -> Any:
        if args["v"] == "y":
            await asyncio.sleep(0.3)  # x is parked by now
            raise RuntimeError("y breaks")
        return args

    world = LocalWorld(tmp_path / "data")
    started = time.monotonic()
    try:
        workflow = lwtool.lock_workflow(tmp_path / "wf.lwir.yaml")
        # bounded: a branch left waiting for a settled group would hang the run
        run = asyncio.wait_for(lwtool.run_workflow(workflow, {}, world=world,
                                                   tools={"step": step}, run_id="f"), 20)
        if mode == "fail_fast":
            with pytest.raises(lwtool.RunFailedError, match="y breaks"):
                asyncio.run(run)
        else:
            with pytest.raises(lwtool.RunWaitingError) as waiting:
                asyncio.run(run)
            # y's own ask went with its failure; x's wait is the group's
            assert [r["stepPath"] for r in waiting.value.requests] == ["fan[0].ask"]
    finally:
        world.close()
    assert time.monotonic() - started < 10
