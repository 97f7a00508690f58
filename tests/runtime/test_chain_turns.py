"""A chain of quick steps awaits nothing that yields (commits are made at once, quick
tools return at once), so it lets the event loop run every few milliseconds
(`RunState.turn_due`): Ctrl-C and SIGTERM stop it at once, and timers fire while it
runs instead of after it."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lwtool.runtime.interpreter import start_run
from lwtool.tools import ToolRegistry
from lwtool.world.local import LocalWorld
from tests.conftest import ROOT, run_cli

STEPS = 6000
TOOLS = '''
from pathlib import Path

async def bump(args):
    if args["n"] == 300:
        Path(__file__).with_name("reached").write_text("300")
    return {"n": args["n"] + 1}

tools = {"bump": bump}
'''


def _chain(steps: int) -> dict[str, Any]:
    body = [{"id": f"s{i}", "uses": "tool.call", "with": {"tool": "bump"},
             "input": {"n": f"{{{{ steps.s{i - 1}.output.n }}}}"} if i else {"n": 0},
             **({"needs": [f"s{i - 1}"]} if i else {})} for i in range(steps)]
    return {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "quick-chain"}, "permissions": {"tools": ["bump"]},
            "steps": body}


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_a_signal_stops_a_chain_of_quick_steps_at_once(tmp_path: Path, sig: signal.Signals,
                                                        code: int, word: str) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "chain.lwir.json").write_text(json.dumps(_chain(STEPS)))
    (tmp_path / "in.json").write_text("{}")
    args = ["--tools", f"{tmp_path / 'tools.py'}:tools", "--data-dir", str(tmp_path / "data")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", str(tmp_path / "chain.lwir.json"), "--input",
         str(tmp_path / "in.json"), *args, "--run-id", "run_quick", "--durability",
         "process", "--json"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "reached").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
        time.sleep(0.002)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, (out, err)  # not 0: the chain did not run to its end
    assert err.splitlines()[-1] == \
        f"lwtool: run run_quick {word}; resume it with `lwtool replay run_quick {' '.join(args)}`"
    replayed = run_cli("replay", "run_quick", *args, "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["output"] == {"n": STEPS}


def test_timers_fire_while_a_chain_of_quick_steps_runs(tmp_path: Path) -> None:
    fired: list[int] = []
    calls: list[int] = []
    registry = ToolRegistry()

    @registry.tool()
    async def bump(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args["n"])
        return {"n": args["n"] + 1}

    async def main() -> dict[str, Any]:
        asyncio.get_running_loop().call_later(0.02, lambda: fired.append(len(calls)))
        world = LocalWorld(tmp_path / "data", durability="process")
        try:
            return await start_run(world, _chain(2000), {}, registry, {})
        finally:
            world.close()

    result = asyncio.run(main())
    assert result["output"] == {"n": 2000}
    assert fired and fired[0] < 2000, fired  # it fired during the chain, not after it
