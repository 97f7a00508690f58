"""Harness speed, printed as figures:

1. recording overhead per agent turn: a 200-turn session (each turn one tool call) with
   a scripted model, every model reply and tool result durably committed, next to the
   same 200 turns without recording (the scripted model and the tool called directly);
2. fast-forward: resuming that session when all 200 turns are committed and only the
   final answer is missing; goal under 100 ms;
3. bash command start: `true` through the bash tool in its bubblewrap sandbox (path
   check, pids cgroup, namespaces, mounts), next to `bash -c true` on the host, and in
   the opt-in path-check mode.

Run: .venv/bin/python bench/harness.py
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lwtool.calls.scripted import ScriptedModel  # noqa: E402
from lwtool.harness.bash import BashOptions, BashTool  # noqa: E402
from lwtool.harness.session import run_session  # noqa: E402
from lwtool.harness.session_spec import SessionSpec  # noqa: E402
from lwtool.harness.stores import ScratchLayout, role_mounts  # noqa: E402
from lwtool.sandbox.bwrap import bwrap_problem  # noqa: E402
from lwtool.tools import ToolRegistry  # noqa: E402
from lwtool.world.local import LocalWorld  # noqa: E402
from lwtool.world.local_store import chain_run  # noqa: E402

TURNS = 200


def _model() -> ScriptedModel:
    replies: list[Any] = [{"toolCalls": [{"name": "echo", "arguments": {"n": n}}]}
                          for n in range(TURNS)]
    return ScriptedModel([*replies, "done"])


def _tools() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register("echo", lambda args: {"n": args["n"]}, "Echo n.")
    return tools


def _spec() -> SessionSpec:
    return SessionSpec("agent", _model(), "Echo 0 to 199.", max_turns=TURNS + 1)


def bare() -> float:
    """Seconds per turn without recording: the model's reply and the tool, in a loop."""
    model, tool = _model(), _tools().tools["echo"].fn
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    started = time.perf_counter()
    for _ in range(TURNS):
        _, calls = model.next(messages)
        result = tool(json.loads(calls[0]["arguments"]))
        messages = [*messages, {"role": "assistant", "content": None},
                    {"role": "tool", "content": json.dumps(result)}]
    return (time.perf_counter() - started) / TURNS


def recorded(folder: Path) -> float:
    world = LocalWorld(folder / "data")
    started = time.perf_counter()
    asyncio.run(run_session(world, _spec(), _tools(), run_id="bench"))
    elapsed = time.perf_counter() - started
    world.close()
    return elapsed / (TURNS + 1)


def fast_forward(folder: Path) -> float:
    """Cut the finished session back to 'all turns committed, no answer yet', resume."""
    db = sqlite3.connect(folder / "data" / "events" / "events.db", isolation_level=None)
    db.execute("BEGIN")
    last = db.execute("SELECT max(seq) FROM events WHERE type = 'harness.model.responded'"
                      ).fetchone()[0]
    db.execute("DELETE FROM events WHERE seq >= ?", (last - 1,))
    db.execute("UPDATE runs SET status = 'running'")
    chain_run(db, "bench")
    db.execute("COMMIT")
    db.close()
    world = LocalWorld(folder / "data")
    started = time.perf_counter()
    result = asyncio.run(run_session(world, _spec(), _tools(), run_id="bench"))
    elapsed = time.perf_counter() - started
    assert result.text == "done" and result.turns == TURNS + 1, result
    world.close()
    return elapsed


def bash_start(folder: Path, sandbox: str, runs: int = 50) -> float:
    """Median seconds for `true` through the bash tool."""
    data = folder / "data"
    mounts = role_mounts("planner", data, ScratchLayout(data, "b"), workflow_id="wf")
    tool = BashTool(mounts.mounts, BashOptions(sandbox=sandbox), data / "tmp")  # type: ignore[arg-type]

    async def timed() -> list[float]:
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            await tool.run("true")
            times.append(time.perf_counter() - started)
        return times

    return statistics.median(asyncio.run(timed()))


def host_start(runs: int = 50) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(["/bin/bash", "-c", "true"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    bares, records, forwards = [], [], []
    for _ in range(5):
        bares.append(bare())
        with tempfile.TemporaryDirectory() as name:
            records.append(recorded(Path(name)))
            forwards.append(fast_forward(Path(name)))
    b, r = statistics.median(bares), statistics.median(records)
    print(f"agent turn, recorded: {r * 1e6:,.0f} µs/turn (bare model + tool: "
          f"{b * 1e6:,.1f} µs/turn; recording overhead {(r - b) * 1e6:,.0f} µs/turn)")
    f = statistics.median(forwards)
    print(f"fast-forward of a session with {TURNS} committed turns: {f * 1000:.0f} ms "
          f"(goal < 100 ms; best {min(forwards) * 1000:.0f} ms)")
    with tempfile.TemporaryDirectory() as name:
        checked = bash_start(Path(name), "path-check")
        sandboxed = bash_start(Path(name), "bwrap") if bwrap_problem() is None else None
    shown = f"{sandboxed * 1000:.1f} ms" if sandboxed else f"n/a ({bwrap_problem()})"
    print(f"bash command start: {shown} in bubblewrap, {checked * 1000:.1f} ms in "
          f"path-check mode, {host_start() * 1000:.1f} ms for bash -c true on the host")


if __name__ == "__main__":
    main()
