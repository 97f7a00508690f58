"""Orchestrator fan-out: 50 sub-runs of a two-step workflow (two ai.generate steps on a
model behind litellm, served by a loopback OpenAI-compatible server answering in 50 ms),
run by one orchestrator turn of 50 run_workflow calls, 10 at a time.

Prints the sub-runs' wall time against the ideal (50 x 2 x 50 ms / 10 = 500 ms; goal
within 1.3x), the same fan-out of bare litellm calls on the same server (the floor
without lwtool: what litellm and the server cost), and the orchestrator's own
overhead per sub-run (the whole pipeline's wall time minus the sub-runs', over 50).
The orchestrator is a scripted model (no latency) so its turns are lwtool's cost only.

Run: .venv/bin/python bench/orchestrator.py [--reps N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from lwtool import ScriptedModel, ToolRegistry  # noqa: E402
from lwtool.orchestrate.api import orchestrate  # noqa: E402
from lwtool.orchestrate.pipeline import pipeline_of  # noqa: E402
from lwtool.world.local import LocalWorld  # noqa: E402

SUB_RUNS, STEPS, LATENCY, FAN_OUT = 50, 2, 0.05, 10
IDEAL = SUB_RUNS * STEPS * LATENCY / FAN_OUT
LWIR = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: two-calls}
permissions: {models: [fast]}
steps:
  - {id: first, uses: ai.generate, with: {model: fast, prompt: "one {{ input.n }}"}}
  - {id: second, uses: ai.generate, needs: [first], with: {model: fast, prompt: "two"}}
"""
DEFINITION = """\
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: two-calls
description: Two model calls.
models: [{id: fast, model: openai/bench}]
planner: {plan: two-calls.lwir.yaml}
"""


SERVER = """
import sys, time
sys.path.insert(0, {root!r})
from tests.fixtures.openai_server import FixtureServer
server = FixtureServer(["ok"] * 1_000_000, delay={delay})
print(server.base_url, flush=True)
server.httpd.serve_forever()
"""


@contextmanager
def model_server() -> Iterator[str]:
    """The loopback model server in a process of its own (it must not share this
    process's interpreter lock with what is measured); yields its base URL."""
    proc = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT),
                                                                 delay=LATENCY)],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait()


def orchestrator() -> ScriptedModel:
    def fan_out(messages: list[dict[str, Any]]) -> dict[str, Any]:
        import json

        version = json.loads(messages[-1]["content"])["workflowVersionId"]
        return {"toolCalls": [{"name": "run_workflow", "arguments": {
            "workflowVersionId": version, "input": {"n": n}}} for n in range(SUB_RUNS)]}

    return ScriptedModel([{"toolCalls": [{"name": "plan_workflow", "arguments": {
        "workflowId": "two-calls", "input": {"n": 0}}}]}, fan_out, "done"])


async def one_pipeline(folder: Path, rep: int) -> tuple[float, float]:
    """(the pipeline's wall time, the sub-runs' wall time: first start to last end)."""
    world = LocalWorld(folder / f"data{rep}", max_concurrent_steps=32, durability="process")
    pipeline = pipeline_of([folder / "two-calls.definition.yaml"],
                           {"model": orchestrator(), "maxConcurrentSubRuns": FAN_OUT})
    started = time.perf_counter()
    result = await orchestrate(pipeline, {}, world=world, tools=ToolRegistry(),
                               run_id=f"bench{rep}")
    total = time.perf_counter() - started
    assert result["status"] == "completed" and len(result["subRuns"]) == SUB_RUNS, result
    runs = [world.get_run(s["runId"]) for s in result["subRuns"]]
    window = max(r.updated_at for r in runs) - min(r.created_at for r in runs)
    world.close()
    return total, window


async def bare_litellm() -> float:
    """The same 100 calls, 10 sub-runs' worth at a time, straight through litellm."""
    import litellm

    gate = asyncio.Semaphore(FAN_OUT)

    async def sub_run(n: int) -> None:
        async with gate:
            for step in range(STEPS):
                await litellm.acompletion(model="openai/bench", messages=[
                    {"role": "user", "content": f"{step} {n}"}])

    started = time.perf_counter()
    await asyncio.gather(*(sub_run(n) for n in range(SUB_RUNS)))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    reps = parser.parse_args().reps
    with tempfile.TemporaryDirectory() as tmp, model_server() as base_url:
        folder = Path(tmp)
        (folder / "two-calls.lwir.yaml").write_text(LWIR)
        (folder / "two-calls.definition.yaml").write_text(DEFINITION)
        os.environ.update({"LITELLM_LOCAL_MODEL_COST_MAP": "True",
                           "OPENAI_API_BASE": base_url,
                           "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-bench",
                           "LWTOOL_BASH_SANDBOX": "path-check"})
        asyncio.run(bare_litellm())  # warm: litellm's imports and first-call set-up
        floors = [asyncio.run(bare_litellm()) for _ in range(reps)]
        figures = [asyncio.run(one_pipeline(folder, rep)) for rep in range(reps)]
    totals = [t for t, _ in figures]
    windows = [w for _, w in figures]
    window, floor, total = (statistics.median(windows), statistics.median(floors),
                            statistics.median(totals))
    print(f"{SUB_RUNS} sub-runs x {STEPS} model calls of {LATENCY * 1000:.0f} ms, "
          f"{FAN_OUT} at a time (median of {reps}):")
    print(f"  sub-runs' wall time: {window * 1000:.0f} ms = {window / IDEAL:.2f}x the ideal "
          f"{IDEAL * 1000:.0f} ms  (goal <= 1.3x)")
    print(f"  bare litellm, same calls and fan-out: {floor * 1000:.0f} ms = "
          f"{floor / IDEAL:.2f}x the ideal (the floor without lwtool)")
    print(f"  lwtool over bare litellm: {(window - floor) / SUB_RUNS * 1000:.1f} ms per sub-run")
    print(f"  whole pipeline: {total * 1000:.0f} ms; orchestrator overhead per sub-run "
          f"(pipeline minus sub-runs): {(total - window) / SUB_RUNS * 1000:.2f} ms")


if __name__ == "__main__":
    main()
