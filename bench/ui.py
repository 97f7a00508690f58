"""Web inspector speed, measured in headless Chromium (Debian's, through Playwright)
against `lwtool ui` started as a user starts it:

- the run page of a 1,000-step run (a chain of tool.call and ai.generate steps on the
  offline model: 500 model calls, ~6,000 events): navigation start to the first frame
  painted after the load event (goal: under 1 s);
- the runs list of a data dir holding 10,000 runs (goal: under 500 ms).

Both runs are made with the real runtime (`process` durability, so building the data
takes seconds, not minutes). Figures are medians over --repeat loads (default 5), after
one warm-up load; the server's own time (first byte) is printed beside them.

Run: .venv/bin/python bench/ui.py [--steps N] [--runs N] [--repeat N] [--data-dir DIR]
(a --data-dir that already holds the runs is reused).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _generate import chain_lwir  # noqa: E402

from lwtool.runtime.interpreter import start_run  # noqa: E402
from lwtool.tools import ToolRegistry  # noqa: E402
from lwtool.world.local import LocalWorld  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
ONE_STEP = {
    "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow", "metadata": {"name": "one"},
    "permissions": {"models": [], "tools": ["echo"]},
    "steps": [{"id": "only", "uses": "tool.call", "with": {"tool": "echo"},
               "input": {"value": "{{ input.seed }}"}}],
}
PAINTED = """async () => {
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const nav = performance.getEntriesByType("navigation")[0];
  return {painted: performance.now(), firstByte: nav.responseStart,
          loaded: nav.loadEventEnd, bytes: nav.transferSize};
}"""


def echo(args: Any) -> Any:
    return {"value": str(args.get("value"))}


def registry() -> ToolRegistry:
    tools = ToolRegistry()
    tools.register("echo", echo, blocking=False)
    return tools


def build(data_dir: Path, steps: int, runs: int) -> None:
    world = LocalWorld(data_dir, durability="process")
    have = {r.run_id for r in world.runs_page(None, None, 0, runs + 10)[1]}
    if "big" not in have:
        started = time.perf_counter()
        asyncio.run(start_run(world, chain_lwir(steps), {"seed": "x"}, registry(), {},
                              "big"))
        print(f"built a {steps}-step run in {time.perf_counter() - started:.1f} s")
    missing = [f"r{n:05d}" for n in range(runs - 1) if f"r{n:05d}" not in have]
    if missing:
        started = time.perf_counter()

        async def many() -> None:
            for run_id in missing:
                await start_run(world, ONE_STEP, {"seed": run_id}, registry(), {}, run_id)

        asyncio.run(many())
        print(f"built {len(missing)} one-step runs in {time.perf_counter() - started:.1f} s")
    world.close()


def measure(page: Any, url: str, repeat: int) -> tuple[float, float, int]:
    """(median ms to the first frame after load, median ms to first byte, bytes)."""
    page.goto(url)  # warm-up
    painted, first = [], []
    size = 0
    for _ in range(repeat):
        page.goto(url, wait_until="load")
        timing = page.evaluate(PAINTED)
        painted.append(timing["painted"])
        first.append(timing["firstByte"])
        size = int(timing["bytes"])
    return statistics.median(painted), statistics.median(first), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data-dir", type=Path)
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("bench/ui.py needs chromium (apt-get install chromium)")
    scratch = None if args.data_dir else tempfile.mkdtemp(prefix="lwtool-ui-bench-")
    data_dir = args.data_dir or Path(scratch or ".")
    build(data_dir, args.steps, args.runs)
    server = subprocess.Popen([sys.executable, "-m", "lwtool", "ui", "--data-dir",
                               str(data_dir), "--port", "0"], text=True,
                              stderr=subprocess.PIPE)
    assert server.stderr is not None
    found = re.search(r"(http://127\.0\.0\.1:\d+/)", server.stderr.readline())
    assert found, "lwtool ui did not start"
    base = found.group(1)
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            run_ms, run_server, run_bytes = measure(page, f"{base}runs/big", args.repeat)
            nodes = page.locator("svg.graph g.node").count()
            list_ms, list_server, list_bytes = measure(page, base, args.repeat)
            total = page.locator("h1 small").inner_text()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    print(f"run page, {args.steps}-step run ({nodes} graph nodes, {run_bytes:,} bytes): "
          f"{run_ms:.0f} ms to painted (first byte {run_server:.0f} ms); goal < 1000 ms")
    print(f"runs list, {total} runs (first page of 100, {list_bytes:,} bytes): "
          f"{list_ms:.0f} ms to painted (first byte {list_server:.0f} ms); goal < 500 ms")


if __name__ == "__main__":
    main()
