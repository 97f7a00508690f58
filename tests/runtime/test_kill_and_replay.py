"""Durability with real process kills: SIGKILL `lwtool run` at chosen points, then
`lwtool replay` finishes with the output of an uninterrupted run, and the side-effect
counter shows that no completed step ran again (only the step in flight may repeat)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT, Worlds, run_cli

HERE = Path(__file__).parent
TOOLS = f"{HERE / 'side_effects.py'}:tools"
# Every kill here runs in both durability modes and in both worlds, local and
# PostgreSQL (tests/conftest.py: durability, world_kind).
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("durability", "world_kind")]


def _env(work: Path, **extra: str) -> dict[str, str]:
    """The environment of a command on `work`: its world when this module's tests run
    (other modules borrow these helpers for the local world)."""
    return {**os.environ, "LWTOOL_TEST_DIR": str(work), **Worlds.current().env(work / "data"),
            **extra}


def _calls(work: Path) -> Counter[str]:
    log = work / "calls.log"
    return Counter(log.read_text().split()) if log.exists() else Counter()


def _start(work: Path, workflow: str, run_input: object, run_id: str,
           **env: str) -> subprocess.Popen[str]:
    (work / "input.json").write_text(json.dumps(run_input))
    return subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", str(HERE / "workflows" / workflow),
         "--input", str(work / "input.json"), "--tools", TOOLS, "--data-dir",
         str(work / "data"), "--run-id", run_id, "--json"],
        cwd=ROOT, env=_env(work, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"run ended before {path.name}: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"timed out waiting for {path.name}")
        time.sleep(0.02)


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def _replay(work: Path, run_id: str, **env: str) -> dict[str, object]:
    result = run_cli("replay", run_id, "--tools", TOOLS, "--data-dir", str(work / "data"),
                     "--json", env=_env(work, **env))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _uninterrupted(tmp_path: Path, workflow: str, run_input: object, **env: str) -> object:
    work = tmp_path / "reference"
    work.mkdir()
    proc = _start(work, workflow, run_input, "run_reference", **env)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out)["output"]


def test_kill_during_a_step(tmp_path: Path, durability: str) -> None:
    work = tmp_path / "killed"
    work.mkdir()
    proc = _start(work, "chain.lwir.yaml", {"seed": "s"}, "run_chain", LWTOOL_TEST_BLOCK="c")
    _wait_for(work / "blocked-c", proc)
    _kill(proc)
    result = _replay(work, "run_chain", LWTOOL_DURABILITY="strict" if durability == "process"
                     else "process")  # replay keeps the run's own mode whatever it is told
    started = run_cli("events", "run_chain", "--data-dir", str(work / "data"), "--json",
                      "--type", "RunStarted", env=_env(work)).stdout
    assert json.loads(started)["payload"]["durability"] == durability
    assert result["output"] == _uninterrupted(tmp_path, "chain.lwir.yaml", {"seed": "s"})
    assert result["output"] == {"key": "d", "value": "s-b-c-d"}
    assert _calls(work) == Counter({"record:a": 1, "record:b": 1, "record:c": 2, "record:d": 1})


def test_kill_between_step_completed_and_the_next_step(tmp_path: Path) -> None:
    work = tmp_path / "killed"
    work.mkdir()
    proc = _start(work, "chain.lwir.yaml", {"seed": "s"}, "run_gap",
                  LWTOOL_FAULT_KILL_AFTER="StepCompleted@b")
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert _calls(work) == Counter({"record:a": 1, "record:b": 1})
    result = _replay(work, "run_gap")
    assert result["output"] == {"key": "d", "value": "s-b-c-d"}
    assert _calls(work) == Counter({"record:a": 1, "record:b": 1, "record:c": 1, "record:d": 1})


def test_kill_in_the_middle_of_a_parallel_group(tmp_path: Path) -> None:
    items = [{"id": f"i{n}", "n": n} for n in range(6)]
    work = tmp_path / "killed"
    work.mkdir()
    proc = _start(work, "fanout.lwir.yaml", {"items": items}, "run_fan",
                  LWTOOL_TEST_BLOCK="i3")
    _wait_for(work / "blocked-i3", proc)
    time.sleep(0.2)  # let the sibling branch in flight commit too
    _kill(proc)
    before = _calls(work)
    committed = {json.loads(line)["stepPath"] for line in run_cli(
        "events", "run_fan", "--data-dir", str(work / "data"), "--json", "--type",
        "StepCompleted", env=_env(work)).stdout.splitlines()}
    assert {"each[i0].work", "each[i1].work", "each[i2].work"} <= committed
    assert "each[i3].work" not in committed
    result = _replay(work, "run_fan")
    assert result["output"] == _uninterrupted(tmp_path, "fanout.lwir.yaml", {"items": items})
    after = _calls(work)
    for n in range(6):
        key = f"i{n}"
        if f"each[{key}].work" in committed:
            assert after[f"work:{key}"] == before[f"work:{key}"] == 1  # never re-run
        else:
            assert after[f"work:{key}"] >= 1
    assert after["work:i3"] == 2  # in flight when killed: at-least-once


def test_kill_during_visit_2_of_a_loop(tmp_path: Path) -> None:
    work = tmp_path / "killed"
    work.mkdir()
    run_input = {"text": "go"}
    proc = _start(work, "loop.lwir.yaml", run_input, "run_loop",
                  LWTOOL_TEST_BLOCK="improve-3")
    _wait_for(work / "blocked-improve-3", proc)
    _kill(proc)
    result = _replay(work, "run_loop")
    assert result["output"] == _uninterrupted(tmp_path, "loop.lwir.yaml", run_input)
    assert result["output"] == {"text": "go!!!", "rounds": 3}
    assert _calls(work) == Counter({"improve:improve-1": 1, "check:check-1": 1,
                                    "improve:improve-2": 1, "check:check-2": 1,
                                    "improve:improve-3": 2, "check:check-3": 1,
                                    "publish:publish": 1})
    paths = [json.loads(line)["stepPath"] for line in run_cli(
        "events", "run_loop", "--data-dir", str(work / "data"), "--json", "--type",
        "StepCompleted", env=_env(work)).stdout.splitlines()]
    assert paths == ["improve.visit[0]", "check.visit[0]", "again.visit[0]",
                     "improve.visit[1]", "check.visit[1]", "again.visit[1]",
                     "improve.visit[2]", "check.visit[2]", "again.visit[2]", "publish"]


def test_kill_during_a_call_made_on_the_event_loop(tmp_path: Path) -> None:
    """`count` is proven quick after three calls in threads; its fifth call, on the
    loop's own thread, is killed: the replay gives the uninterrupted output and calls
    nothing that completed again."""
    work = tmp_path / "killed"
    work.mkdir()
    proc = _start(work, "quick-loop.lwir.yaml", {"n": 0}, "run_quick",
                  LWTOOL_TEST_BLOCK="count-5", LWTOOL_QUICK_TOOL_MS="50")  # a GC pause: quick
    _wait_for(work / "blocked-count-5", proc)
    assert (work / "blocked-count-5").read_text() == "MainThread"
    _kill(proc)
    result = _replay(work, "run_quick")
    assert result["output"] == _uninterrupted(tmp_path, "quick-loop.lwir.yaml", {"n": 0})
    assert result["output"] == {"n": 6}
    assert _calls(work) == Counter({**{f"count:count-{n}": 1 for n in (1, 2, 3, 4, 6)},
                                    "count:count-5": 2, "count:count-6-last": 1})


def test_a_second_replay_of_a_running_run_is_refused(tmp_path: Path) -> None:
    work = tmp_path / "busy"
    work.mkdir()
    proc = _start(work, "chain.lwir.yaml", {"seed": "s"}, "run_busy", LWTOOL_TEST_BLOCK="b")
    _wait_for(work / "blocked-b", proc)
    try:
        second = run_cli("replay", "run_busy", "--tools", TOOLS, "--data-dir",
                         str(work / "data"), env=_env(work))
        assert second.returncode == 2
        assert "being executed by another process" in second.stderr
        again = run_cli("run", str(HERE / "workflows" / "chain.lwir.yaml"), "--input",
                        str(work / "input.json"), "--tools", TOOLS, "--data-dir",
                        str(work / "data"), "--run-id", "run_busy", env=_env(work))
        assert again.returncode == 2
    finally:
        _kill(proc)
    assert _calls(work)["record:b"] == 1
    assert _replay(work, "run_busy")["output"] == {"key": "d", "value": "s-b-c-d"}


def test_kill_after_a_model_reply_does_not_pay_for_it_again(tmp_path: Path) -> None:
    work = tmp_path / "killed"
    work.mkdir()
    (work / "input.json").write_text(json.dumps({"topic": "durable replay"}))
    data = str(work / "data")
    common = ["--tools", TOOLS, "--data-dir", data, "--models",
              str(HERE / "workflows" / "models.yaml")]
    killed = subprocess.run(
        [sys.executable, "-m", "lwtool", "run", str(HERE / "workflows" / "ask.lwir.yaml"),
         "--input", str(work / "input.json"), "--run-id", "run_ask", *common],
        cwd=ROOT, env=_env(work, LWTOOL_FAULT_KILL_AFTER="harness.model.responded@second"),
        capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL
    replay = run_cli("replay", "run_ask", *common, "--json", env=_env(work))
    assert replay.returncode == 0, replay.stderr
    called = run_cli("events", "run_ask", "--data-dir", data, "--type", "harness.model.called",
                     "--json", env=_env(work)).stdout.splitlines()
    assert [json.loads(line)["stepPath"] for line in called] == ["first", "second"]
    completed = run_cli("events", "run_ask", "--data-dir", data, "--type", "StepCompleted",
                        "--json", env=_env(work)).stdout.splitlines()
    assert len(completed) == 2
    assert json.loads(replay.stdout)["usage"]["unpricedCalls"] == 2


def _completed_paths(work: Path, run_id: str) -> list[str]:
    return [json.loads(line)["stepPath"] for line in run_cli(
        "events", run_id, "--data-dir", str(work / "data"), "--json", "--type",
        "StepCompleted", env=_env(work)).stdout.splitlines()]


def test_kill_with_multi_step_branches_keeps_each_branch_contribution(tmp_path: Path) -> None:
    """Each branch's contribution is its most recently *committed* step (`slow`, which
    commits after `fast -> after`); a replay re-applies recorded results in commit
    order, so it contributes the same step (document order would pick `after`)."""
    items = [{"id": f"i{n}", "n": n} for n in range(4)]
    reference = _uninterrupted(tmp_path, "branches.lwir.yaml", {"items": items})
    assert reference == [{"id": f"i{n}-slow", "double": 2 * n} for n in range(4)]
    work = tmp_path / "killed"
    work.mkdir()
    proc = _start(work, "branches.lwir.yaml", {"items": items}, "run_branches",
                  LWTOOL_TEST_BLOCK="i3-slow")
    _wait_for(work / "blocked-i3-slow", proc)
    deadline = time.monotonic() + 30
    while "each[i2].slow" not in _completed_paths(work, "run_branches"):
        assert time.monotonic() < deadline, "branch i2 never committed"
        time.sleep(0.05)
    _kill(proc)
    committed = _completed_paths(work, "run_branches")
    assert {"each[i0].slow", "each[i0].after", "each[i1].slow", "each[i2].slow"} <= set(
        committed)
    before = _calls(work)
    result = _replay(work, "run_branches")
    assert result["output"] == reference
    after = _calls(work)
    for path in committed:  # no committed step ran again
        key = path.split("[")[1].split("]")[0] + "-" + path.rsplit(".", 1)[1]
        assert after[f"work:{key}"] == before[f"work:{key}"] == 1
    assert after["work:i3-slow"] == 2


def test_kill_in_a_diamond_keeps_the_final_output(tmp_path: Path) -> None:
    reference = _uninterrupted(tmp_path, "diamond.lwir.yaml", {"n": 1})
    assert reference == {"id": "late", "double": 16}
    for block in ("d", "late"):
        work = tmp_path / f"killed-{block}"
        work.mkdir()
        proc = _start(work, "diamond.lwir.yaml", {"n": 1}, "run_diamond",
                      LWTOOL_TEST_BLOCK=block)
        _wait_for(work / f"blocked-{block}", proc)
        if block == "late":  # `early` commits while `late` hangs
            deadline = time.monotonic() + 30
            while "early" not in _completed_paths(work, "run_diamond"):
                assert time.monotonic() < deadline
                time.sleep(0.05)
        _kill(proc)
        result = _replay(work, "run_diamond")
        assert result["output"] == reference
        calls = _calls(work)
        assert {k: v for k, v in calls.items() if k != f"work:{block}"} == {
            f"work:{s}": 1 for s in "a b c d late early".split() if s != block}
        assert calls[f"work:{block}"] == 2


def test_kill_after_a_loop_exit_runs_the_steps_after_it(tmp_path: Path) -> None:
    """The loop goes round three times; `publish` (the exit target, chosen against on
    rounds one and two) and `announce` after it still run, once each."""
    run_input = {"text": "go"}
    reference = _uninterrupted(tmp_path, "loop-exit.lwir.yaml", run_input)
    assert reference == {"key": "announce", "value": "go!!!"}
    work = tmp_path / "killed"
    work.mkdir()
    proc = _start(work, "loop-exit.lwir.yaml", run_input, "run_exit",
                  LWTOOL_FAULT_KILL_AFTER="StepCompleted@publish")
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    result = _replay(work, "run_exit")
    assert result["output"] == reference
    assert _calls(work) == Counter({"improve:improve-1": 1, "check:check-1": 1,
                                    "improve:improve-2": 1, "check:check-2": 1,
                                    "improve:improve-3": 1, "check:check-3": 1,
                                    "publish:publish": 1, "record:announce": 1})
    assert _completed_paths(work, "run_exit")[-2:] == ["publish", "announce"]


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_ctrl_c_and_sigterm_print_one_line_and_leave_the_run_resumable(
        tmp_path: Path, sig: signal.Signals, code: int, word: str) -> None:
    work = tmp_path / "stopped"
    work.mkdir()
    proc = _start(work, "chain.lwir.yaml", {"seed": "s"}, "run_stop", LWTOOL_TEST_BLOCK="c")
    _wait_for(work / "blocked-c", proc)
    signalled = time.monotonic()
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # a sync tool's thread sleeps on; the CLI must not
        proc.kill()
        raise
    # The loop waits for the sync tool's thread itself (nothing else is in flight), in
    # slices: the signal gets through within one, not when the tool returns.
    assert time.monotonic() - signalled < 5
    assert proc.returncode == code, err
    # the hint names the flags the resume needs, as this run was given them
    where = "" if Worlds.current().server else f" --data-dir {work / 'data'}"
    hint = f"resume it with `lwtool replay run_stop --tools {TOOLS}{where}`"
    assert err.splitlines()[1:] == [f"lwtool: run run_stop {word}; {hint}"]
    assert json.loads(out) == {"runId": "run_stop", "status": "interrupted",  # --json
                               "causeCode": "cancelled", "resume": hint}
    events = run_cli("events", "run_stop", "--data-dir", str(work / "data"), "--json",
                     env=_env(work))
    types = [json.loads(line)["type"] for line in events.stdout.splitlines()]
    assert "RunFailed" not in types and "RunCompleted" not in types  # nothing false
    printed = shlex.split(hint.split("`")[1])  # it works as printed
    replayed = run_cli(*printed[1:], "--json", env=_env(work))
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["output"] == {"key": "d", "value": "s-b-c-d"}
    assert _calls(work) == Counter({"record:a": 1, "record:b": 1, "record:c": 2, "record:d": 1})


def test_the_soak_script_kills_and_finds_nothing_wrong(durability: str) -> None:
    """bench/soak.py (the 1,000-kill figure of the README) on a small budget, in each
    mode: its stops land, and lost events, re-run steps, wrong outputs, damage and
    tracebacks are 0."""
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "soak.py"), "--kills", "12",
                             "--seed", "5", "--durability", durability],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert int(lines[0].split()[1]) >= 12  # "soak: N stops (...)"
    assert f"; durability: {durability} " in lines[0]
    for figure in ("lost committed events", "committed steps re-run",
                   "outputs different from the uninterrupted run", "damaged stores (verify)",
                   "tracebacks"):
        assert f"{figure}: 0" in lines
