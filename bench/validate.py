"""Validation speed: a generated 1,000-step LWIR file (YAML) end to end in-process
(goal < 250 ms), `lwtool validate` on a small file from a cold process (goal < 300 ms),
`lwtool --help` from a cold process (start-up of the CLI itself) and `lwtool run` of a
small example (a loop of tool.call steps, a new data dir each run). Then the figure
of issue 32: cold `lwtool validate` of a small file against `python -c pass`, paired
runs, as a ratio (goal <= 8x), with the modules' bytecode cached as an installed lwtool
has it; and without (PYTHONDONTWRITEBYTECODE, which this workplace sets: every start
then compiles lwtool's modules from source).

Run: .venv/bin/python bench/validate.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _generate import chain_lwir, to_yaml  # noqa: E402

from lwtool.compile import compile_file  # noqa: E402


def best_and_median(samples: list[float]) -> str:
    ordered = sorted(samples)
    return (f"median {statistics.median(samples) * 1000:.1f} ms, p25 "
            f"{ordered[len(ordered) // 4] * 1000:.1f} ms, best {ordered[0] * 1000:.1f} ms")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "chain-1000.lwir.yaml"
        big.write_text(to_yaml(chain_lwir(1000)))
        compile_file(big)  # warm: parser tables and compiled schema are per-process
        samples = []
        for _ in range(30):
            started = time.perf_counter()
            compiled = compile_file(big)
            samples.append(time.perf_counter() - started)
        assert compiled.ok, compiled.findings[:3]
        size_kb = big.stat().st_size // 1024
        print(f"validate 1,000-step YAML ({size_kb} KiB, load+validate): "
              f"{best_and_median(samples)}  (goal < 250 ms)")

        small = ROOT / "examples" / "refine-loop.lwir.yaml"
        lwtool = [sys.executable, "-m", "lwtool", "validate", str(small)]
        subprocess.run(lwtool, check=True)  # warm the OS cache and lark's table cache
        cold = []
        for _ in range(30):
            started = time.perf_counter()
            subprocess.run(lwtool, check=True, env={**os.environ})
            cold.append(time.perf_counter() - started)
        print(f"lwtool validate small file, cold process wall time: {best_and_median(cold)}  "
              "(goal < 300 ms)")
        print(f"lwtool --help, cold process wall time: {best_and_median(_cold_runs(['--help']))}")
        runs = [_cold_run(Path(tmp) / f"data-{n}") for n in range(16)][1:]  # 1st: warm-up
        print("lwtool run examples/refine-loop.lwir.yaml (a loop of tool.call steps), cold "
              f"process wall time: {best_and_median(runs)}")
        for label, env in (("bytecode cached", _with_bytecode()),
                           ("no bytecode", {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})):
            ratio, tool, bare = _paired(lwtool, env)
            print(f"cold validate / python -c pass ({label}): {ratio:.1f}x ({tool * 1000:.0f} "
                  f"ms / {bare * 1000:.0f} ms, median of 9 pairs; goal <= 8x)")


def _with_bytecode() -> dict[str, str]:
    """The environment without PYTHONDONTWRITEBYTECODE (the first run writes the
    bytecode, as pip does at install time)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _paired(command: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Median ratio of `command` to `python -c pass` over 9 pairs, and each median."""
    bare = [sys.executable, "-c", "pass"]
    for warm in (command, bare):
        subprocess.run(warm, check=True, capture_output=True, env=env)
    ratios, tools, bares = [], [], []
    for _ in range(9):
        spans = []
        for run in (command, bare):
            started = time.perf_counter()
            subprocess.run(run, check=True, capture_output=True, env=env)
            spans.append(time.perf_counter() - started)
        tools.append(spans[0])
        bares.append(spans[1])
        ratios.append(spans[0] / spans[1])
    return (statistics.median(ratios), statistics.median(tools), statistics.median(bares))


def _cold_run(data_dir: Path) -> float:
    """Seconds of one `lwtool run` of the refine-loop example into a new data dir."""
    example = ROOT / "examples"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "lwtool", "run", str(example / "refine-loop.lwir.yaml"),
                    "--input", str(example / "inputs" / "refine-loop.json"), "--tools",
                    f"{example / 'tools.py'}:tools", "--data-dir", str(data_dir), "--quiet"],
                   check=True, capture_output=True)
    return time.perf_counter() - started


def _cold_runs(args: list[str], runs: int = 30) -> list[float]:
    command = [sys.executable, "-m", "lwtool", *args]
    subprocess.run(command, check=True, capture_output=True)  # warm the OS cache
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return samples


if __name__ == "__main__":
    main()
