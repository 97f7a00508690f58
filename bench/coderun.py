"""code.run speed, printed as figures (medians):

1. bare Deno: `deno run` of a data: module returning a value (the floor);
2. cold start of one sandboxed step: run_code of a trivial entrypoint (process start,
   bootstrap, import map, data: modules, the result frame);
3. a tool round trip from code: one `await tools.echo()` through the frame channel,
   next to (2) with no call;
4. 20 code.run steps in a parallel group (maxConcurrency 20) in a durable local world:
   the run's wall time, and per step.

Run: .venv/bin/python bench/coderun.py
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lwtool import local_world, run_workflow  # noqa: E402
from lwtool.coderun.deno import deno_binary  # noqa: E402
from lwtool.coderun.policy import CodePolicy  # noqa: E402
from lwtool.coderun.runner import run_code  # noqa: E402
from tests.coderun.helpers import code_step, workflow  # noqa: E402

REPS = 15


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bare_deno() -> float:
    argv = [deno_binary(), "run", "--quiet", "--no-config",
            "data:text/javascript,console.log(JSON.stringify({ok:true}))"]
    samples = []
    for _ in range(REPS):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        samples.append(time.perf_counter() - start)
    return _median_ms(samples)


async def _echo(number: int, name: str, args: Any) -> Any:
    return args


def sandboxed(source: str) -> float:
    samples = []
    for _ in range(REPS):
        start = time.perf_counter()
        out = asyncio.run(run_code({"main.ts": source}, "main.ts", CodePolicy(), {"n": 1},
                                   _echo))
        samples.append(time.perf_counter() - start)
        assert out.ok, out.error
    return _median_ms(samples)


def fan_out(width: int = 20) -> float:
    body = code_step("work", "export async function run({ input, tools }) {\n"
                     "  const r = await tools.echo({ n: input.n });\n  return r.n * 2;\n}",
                     input={"n": "{{ item.n }}"})
    group = {"id": "all", "uses": "parallel", "with": {
        "items": "{{ input.items }}", "itemKey": "{{ item.id }}", "maxBranches": width,
        "maxConcurrency": width, "failureMode": "fail_fast",
        "fanIn": {"order": "input", "output": "array"}}, "steps": [body]}
    doc = workflow(group, tools=["echo"])
    items = [{"id": f"i{i}", "n": i} for i in range(width)]
    samples = []
    for rep in range(5):
        with tempfile.TemporaryDirectory() as tmp:
            world = local_world(Path(tmp))
            start = time.perf_counter()
            result = asyncio.run(run_workflow(doc, {"items": items}, world=world,
                                              tools={"echo": lambda a: a}, run_id=f"r{rep}"))
            samples.append(time.perf_counter() - start)
            assert len(result["output"]) == width
    return _median_ms(samples)


def main() -> None:
    plain = "export async function run({ input }) { return input.n + 1; }"
    call = "export async function run({ input, tools }) { return (await tools.echo(input)).n; }"
    print(f"bare deno run (data: module)           {bare_deno():7.1f} ms")
    cold = sandboxed(plain)
    print(f"sandboxed code.run cold start          {cold:7.1f} ms")
    with_call = sandboxed(call)
    print(f"  with one tool round trip             {with_call:7.1f} ms "
          f"(round trip {with_call - cold:+.1f} ms)")
    total = fan_out()
    print(f"20 code.run steps in a parallel group  {total:7.1f} ms ({total / 20:.1f} ms/step, "
          "durable world, 2 cores)")


if __name__ == "__main__":
    main()
