"""code.run storage is each execution's own (hardening round 3): `localStorage` and
`caches` written by one execution are gone for the next, inside the bubblewrap wall and
without it; and a code.run that keeps state there replays after a SIGKILL to the live
run's output instead of failing "not deterministic"."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lwtool.sandbox.bwrap import bwrap_problem
from tests.coderun.helpers import code_step, workflow
from tests.coderun.test_code_run_kills import TOOLS
from tests.coderun.test_sandbox import run
from tests.conftest import ROOT, run_cli
from tests.runtime.test_kill_and_replay import _calls, _env, _wait_for

REMEMBER = """export async function run({ input }) {
  const before = localStorage.getItem("seen");
  localStorage.setItem("seen", JSON.stringify(input));
  const cache = await caches.open("c");
  const cached = await cache.match("https://lwtool.invalid/k");
  await cache.put("https://lwtool.invalid/k", new Response(JSON.stringify(input)));
  return { before, cached: cached ? await cached.text() : null };
}"""


@pytest.mark.parametrize("walls", [
    pytest.param({}, id="bubblewrap-and-deno"),
    pytest.param({"fs": "read"}, id="deno-only-fs-read"),
    pytest.param({"env_wall": "deno"}, id="deno-only-by-setting"),
])
def test_storage_does_not_pass_between_executions(walls: dict[str, Any],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if walls.pop("env_wall", None):
        monkeypatch.setenv("LWTOOL_CODE_SANDBOX", "deno")
    elif not walls and bwrap_problem() is not None:
        pytest.skip(f"no bubblewrap: {bwrap_problem()}")
    first = run(REMEMBER, {"secret": "workflow A's input"}, **walls)
    second = run(REMEMBER, {"other": "workflow B"}, **walls)
    assert first.ok and second.ok, (first.error, second.error)
    assert first.value == {"before": None, "cached": None}
    assert second.value == {"before": None, "cached": None}


BRANCHING = workflow(code_step("remember", """export async function run({ input, tools }) {
  const key = localStorage.getItem("done") ? "again" : "first";
  localStorage.setItem("done", "1");
  const one = await tools.record({ key: key + "-1", value: 1 });
  const two = await tools.record({ key: key + "-2", value: one.value + 1 });
  return two.value;
}"""), tools=["record"])


@pytest.mark.slow
def test_state_kept_in_storage_replays_to_the_live_output(tmp_path: Path) -> None:
    (tmp_path / "wf.lwir.json").write_text(json.dumps(BRANCHING))
    (tmp_path / "in.json").write_text("{}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", str(tmp_path / "wf.lwir.json"), "--input",
         str(tmp_path / "in.json"), "--tools", TOOLS, "--data-dir", str(tmp_path / "data"),
         "--run-id", "s1", "--json"], cwd=ROOT,
        env=_env(tmp_path, LWTOOL_TEST_BLOCK="first-2"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "blocked-first-2", proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    done = run_cli("replay", "s1", "--tools", TOOLS, "--data-dir", str(tmp_path / "data"),
                   "--json", env=_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == 2
    calls = _calls(tmp_path)
    assert calls["record:first-1"] == 1 and not any(k.startswith("record:again") for k in calls)
