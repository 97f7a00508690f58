"""A run SIGKILLed inside code.run steps resumes without repeating committed tool calls:
the code re-runs, its committed calls answer from the log, and the result is the
uninterrupted run's. A diamond: `a` (tool.call) -> `left`, `right` (code.run, two
calls each) -> `join` (code.run over both)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.coderun.helpers import code_step, workflow
from tests.conftest import ROOT, run_cli
from tests.runtime.test_kill_and_replay import _calls, _env, _wait_for

TOOLS = f"{ROOT / 'tests' / 'runtime' / 'side_effects.py'}:tools"
# Every kill here runs in both durability modes (tests/conftest.py: durability).
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("durability")]


def _branch(name: str) -> dict[str, object]:
    source = (f"export async function run({{ input, tools }}) {{\n"
              f"  const one = await tools.record({{ key: '{name}-1', value: input.v }});\n"
              f"  const two = await tools.record({{ key: '{name}-2', value: one.value + 1 }});\n"
              f"  return {{ {name}: two.value }};\n}}")
    return code_step(name, source, needs=["a"], input={"v": "{{ steps.a.output.value }}"})


DIAMOND = workflow(
    {"id": "a", "uses": "tool.call", "with": {"tool": "record",
                                              "args": {"key": "a", "value": 10}}},
    _branch("left"), _branch("right"),
    code_step("join", "export async function run({ input, tools }) {\n"
              "  const r = await tools.record({ key: 'join', value: input.l + input.r });\n"
              "  return r.value;\n}", needs=["left", "right"],
              input={"l": "{{ steps.left.output.left }}", "r": "{{ steps.right.output.right }}"}),
    tools=["record"])


def _start(work: Path, run_id: str, **env: str) -> subprocess.Popen[str]:
    (work / "wf.lwir.json").write_text(json.dumps(DIAMOND))
    (work / "in.json").write_text("{}")
    return subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", str(work / "wf.lwir.json"), "--input",
         str(work / "in.json"), "--tools", TOOLS, "--data-dir", str(work / "data"),
         "--run-id", run_id, "--json"], cwd=ROOT, env=_env(work, **env),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _reference(tmp_path: Path) -> object:
    work = tmp_path / "reference"
    work.mkdir()
    out, err = _start(work, "ref").communicate(timeout=120)
    assert _calls(work) == Counter({"record:a": 1, "record:left-1": 1, "record:left-2": 1,
                                    "record:right-1": 1, "record:right-2": 1,
                                    "record:join": 1}), err
    return json.loads(out)["output"]


def _replay(work: Path, run_id: str) -> object:
    result = run_cli("replay", run_id, "--tools", TOOLS, "--data-dir", str(work / "data"),
                     "--json", env=_env(work))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["output"]


def test_kill_in_a_tool_call_made_by_code(tmp_path: Path) -> None:
    expected = _reference(tmp_path)
    assert expected == 22
    work = tmp_path / "killed"
    work.mkdir()
    proc = _start(work, "k1", LWTOOL_TEST_BLOCK="left-2")
    _wait_for(work / "blocked-left-2", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    committed = _committed_calls(work, "k1")
    assert {"left-1"} <= committed and "left-2" not in committed
    assert _replay(work, "k1") == expected
    calls = _calls(work)
    # committed before the kill: never again; a call in flight may run once more (the
    # `right` branch runs beside `left`: how far it got at the kill is up to timing)
    assert calls["record:a"] == 1 and calls["record:join"] == 1
    assert calls["record:left-1"] == 1 and calls["record:left-2"] == 2
    for key in ("right-1", "right-2"):
        assert calls[f"record:{key}"] == 1 if key in committed else \
            calls[f"record:{key}"] <= 2, (key, committed, calls)


def _committed_calls(work: Path, run_id: str) -> set[str]:
    """The `key` arguments of the code-made tool calls whose results the log holds."""
    lines = run_cli("events", run_id, "--data-dir", str(work / "data"), "--json", "--type",
                    "harness.tool_call.*").stdout.splitlines()
    events = [json.loads(line) for line in lines]
    keys = {e["payload"]["callId"]: e["payload"]["args"]["key"] for e in events
            if e["type"] == "harness.tool_call.started"}
    return {keys[e["payload"]["callId"]] for e in events
            if e["type"] == "harness.tool_call.succeeded"}


def test_kill_right_after_a_committed_code_call(tmp_path: Path) -> None:
    expected = _reference(tmp_path)
    work = tmp_path / "killed"
    work.mkdir()
    proc = _start(work, "k2", LWTOOL_FAULT_KILL_AFTER="harness.tool_call.succeeded@join")
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert _replay(work, "k2") == expected
    assert max(_calls(work).values()) == 1  # every call had committed: none ran twice


def test_code_that_calls_differently_on_resume_fails_as_not_deterministic(
        tmp_path: Path) -> None:
    """The first call's args come from Math.random(): the resumed attempt asks for
    something other than the logged call, and the step fails instead of being handed
    the logged result."""
    work = tmp_path / "random"
    work.mkdir()
    doc = workflow(code_step("c", "export async function run({ tools }) {\n"
                             "  const a = await tools.record({ key: 'r' + Math.random() });\n"
                             "  await tools.record({ key: 'second' });\n  return a.key;\n}"),
                   tools=["record"])
    (work / "wf.lwir.json").write_text(json.dumps(doc))
    (work / "in.json").write_text("{}")
    proc = subprocess.run(
        [sys.executable, "-m", "lwtool", "run", str(work / "wf.lwir.json"), "--input",
         str(work / "in.json"), "--tools", TOOLS, "--data-dir", str(work / "data"),
         "--run-id", "rnd", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env=_env(work, LWTOOL_FAULT_KILL_AFTER="harness.tool_call.succeeded@c"))
    assert proc.returncode == -signal.SIGKILL
    result = run_cli("replay", "rnd", "--tools", TOOLS, "--data-dir", str(work / "data"),
                     "--json", env=_env(work))
    assert result.returncode == 1
    failed = json.loads(result.stdout)
    assert failed["failedStepPath"] == "c" and "not deterministic" in failed["message"]
    assert _calls(work)["record:second"] == 0
