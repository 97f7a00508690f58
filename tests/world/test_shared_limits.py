"""Model limits of a PostgreSQL world hold for every process together
(lwtool.world.postgres_limits): two limiters standing for two processes never have more
than `maxConcurrent` calls in flight nor start more than `rpm` in a window; a process
that dies lets go of its places at once; two `lwtool worker`s with a models file's
`maxConcurrent: 1` call the model one at a time between them; and a worker makes its
runs' model calls on one loop, so they share its connections."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from lwtool.calls.limits import ModelLimits
from lwtool.world.postgres import PostgresWorld
from lwtool.world.postgres_limits import SharedLimiter
from tests.conftest import ROOT, run_cli
from tests.fixtures.openai_server import fixture_server


def _in_threads(limiters: list[SharedLimiter], calls: int, hold: float,
                said: list[str]) -> list[tuple[float, float]]:
    """`calls` calls through each limiter, each from a thread and loop of its own (as
    processes would); (start, end) of each call's hold of its place."""
    spans: list[tuple[float, float]] = []

    async def one(limiter: SharedLimiter) -> None:
        async with limiter.slot(said.append):
            started = time.monotonic()
            await asyncio.sleep(hold)
            spans.append((started, time.monotonic()))

    threads = [threading.Thread(target=asyncio.run, args=(one(limiter),))
               for limiter in limiters for _ in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return spans


def test_max_concurrent_holds_across_processes(tmp_path: Path, postgres_url: str) -> None:
    world = PostgresWorld(postgres_url, tmp_path)
    limits = ModelLimits(max_concurrent=2)
    limiters = [SharedLimiter(world, "openai/m", limits) for _ in range(2)]
    said: list[str] = []
    spans = _in_threads(limiters, 3, 0.3, said)
    world.close()
    assert len(spans) == 6
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most == 2, spans  # never three at once, though six were asked for together
    assert said and all(w == "maxConcurrent 2: that many calls in flight" for w in said)


def test_rpm_holds_across_processes(tmp_path: Path, postgres_url: str) -> None:
    world = PostgresWorld(postgres_url, tmp_path)
    limits = ModelLimits(rpm=3)
    limiters = [SharedLimiter(world, "openai/r", limits, window=1.0) for _ in range(2)]
    said: list[str] = []
    started = time.monotonic()
    spans = _in_threads(limiters, 3, 0.0, said)
    world.close()
    starts = sorted(s - started for s, _ in spans)
    assert len(starts) == 6
    assert starts[2] < 0.9 and starts[3] >= 0.9, starts  # three, then the window again
    assert "rpm 3: that many calls started in the last minute" in said


def test_tpm_counts_every_processs_tokens(tmp_path: Path, postgres_url: str) -> None:
    world = PostgresWorld(postgres_url, tmp_path)
    limits = ModelLimits(tpm=100)
    first, second = (SharedLimiter(world, "openai/t", limits, window=1.0) for _ in range(2))
    said: list[str] = []

    async def calls() -> float:
        async with first.slot(said.append):
            first.used(120)  # one process's reply spends the minute's tokens
        started = time.monotonic()
        async with second.slot(said.append):  # so the other one waits for the window
            return time.monotonic() - started

    waited = asyncio.run(calls())
    world.close()
    assert waited >= 0.5 and said == ["tpm 100: that many tokens used in the last minute"]


HOLDER = """
import asyncio, sys, time
from lwtool.calls.limits import ModelLimits
from lwtool.world.postgres import PostgresWorld
from lwtool.world.postgres_limits import SharedLimiter

async def main():
    limiter = SharedLimiter(PostgresWorld(sys.argv[1], sys.argv[2]), "openai/k",
                            ModelLimits(max_concurrent=1))
    async with limiter.slot(print):
        print("holding", flush=True)
        time.sleep(3600)

asyncio.run(main())
"""


def test_a_killed_process_lets_go_of_its_place(tmp_path: Path, postgres_url: str) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, postgres_url, str(tmp_path)],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        world = PostgresWorld(postgres_url, tmp_path)
        limiter = SharedLimiter(world, "openai/k", ModelLimits(max_concurrent=1))
        said: list[str] = []

        async def take(timeout: float) -> bool:
            try:
                async with asyncio.timeout(timeout):
                    async with limiter.slot(said.append):
                        return True
            except TimeoutError:
                return False

        assert asyncio.run(take(0.5)) is False  # the live holder keeps it
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        assert asyncio.run(take(10)) is True  # its connection gone, the place is free
        world.close()
    finally:
        if holder.poll() is None:
            holder.kill()


FAN = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
       "metadata": {"name": "fan"}, "permissions": {"models": ["writer"]},
       "steps": [{"id": "say", "uses": "ai.generate", "with": {
           "model": "writer", "prompt": "{{ input.n }}"}}]}


@pytest.mark.slow
def test_two_workers_call_the_model_one_at_a_time_between_them(
        tmp_path: Path, postgres_url: str) -> None:
    (tmp_path / "fan.lwir.json").write_text(json.dumps(FAN))
    (tmp_path / "models.yaml").write_text(
        "writer: {model: openai/gpt-4o-mini, maxConcurrent: 1}\n")
    for n in range(6):
        (tmp_path / "in.json").write_text(json.dumps({"n": n}))
        assert run_cli("run", str(tmp_path / "fan.lwir.json"), "-i", str(tmp_path / "in.json"),
                       "--enqueue", "--run-id", f"m{n}", "--world", postgres_url
                       ).returncode == 0
    with fixture_server([str(n) for n in range(6)], delay=0.3) as server:
        env = {**os.environ, "OPENAI_API_BASE": server.base_url,
               "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-fixture"}
        workers = [subprocess.Popen(
            [sys.executable, "-m", "lwtool", "worker", "--world", postgres_url, "--models",
             str(tmp_path / "models.yaml"), "--data-dir", str(tmp_path / "data"),
             "--concurrency", "3", "--drain", "-v"], cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        logs: list[Any] = [w.communicate(timeout=180)[1] for w in workers]
    assert [w.returncode for w in workers] == [0, 0], logs
    assert len(server.requests) == 6
    assert server.most_at_once == 1, logs  # 6 runs, 2 workers x 3 at a time: one call
    assert all("claimed run" in log for log in logs), logs  # both took runs


@pytest.mark.slow
def test_a_workers_runs_share_its_model_connections(tmp_path: Path,
                                                    postgres_url: str) -> None:
    """Each run executes on a loop of its own, but its model calls go through the
    worker's: litellm keeps a client (and its kept-alive connections) per loop, so four
    runs one after another reuse one connection instead of opening one each."""
    (tmp_path / "fan.lwir.json").write_text(json.dumps(FAN))
    for n in range(4):
        (tmp_path / "in.json").write_text(json.dumps({"n": n}))
        assert run_cli("run", str(tmp_path / "fan.lwir.json"), "-i", str(tmp_path / "in.json"),
                       "--enqueue", "--run-id", f"k{n}", "--world", postgres_url
                       ).returncode == 0
    (tmp_path / "models.yaml").write_text("writer: openai/gpt-4o-mini\n")
    with fixture_server([str(n) for n in range(4)], keep_alive=True) as server:
        env = {**os.environ, "OPENAI_API_BASE": server.base_url,
               "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-fixture"}
        worker = subprocess.Popen(
            [sys.executable, "-m", "lwtool", "worker", "--world", postgres_url, "--models",
             str(tmp_path / "models.yaml"), "--data-dir", str(tmp_path / "data"),
             "--concurrency", "1", "--drain", "-v"], cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        log = worker.communicate(timeout=180)[1]
    assert worker.returncode == 0 and len(re.findall(r"run k\d completed", log)) == 4, log
    assert len(server.peers) == 4 and len(set(server.peers)) == 1, (server.peers, log)


def test_a_wait_cancelled_while_its_place_is_taken_lets_the_place_go(
        tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A call cancelled (its step's deadline) while its thread was taking a place: the
    place the thread got must not stay held, or `maxConcurrent: 1` would stop every
    process's calls of that model for good."""
    world = PostgresWorld(postgres_url, tmp_path)
    limits = ModelLimits(max_concurrent=1)
    limiter = SharedLimiter(world, "openai/c", limits)
    taking = threading.Event()
    original = SharedLimiter._take

    def slow_take(self: SharedLimiter) -> Any:
        found = original(self)
        taking.set()
        time.sleep(0.3)  # the wait is cancelled meanwhile
        return found

    async def cancelled_then_another() -> bool:
        monkeypatch.setattr(SharedLimiter, "_take", slow_take)
        first = asyncio.ensure_future(limiter.slot(lambda why: None).__aenter__())
        await asyncio.to_thread(taking.wait, 5)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        monkeypatch.setattr(SharedLimiter, "_take", original)
        said: list[str] = []
        try:
            async with asyncio.timeout(3):
                async with limiter.slot(said.append):
                    return True
        except TimeoutError:
            return False

    gc.collect()  # what earlier tests of this process left is not this test's
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            assert asyncio.run(cancelled_then_another()), "the place stayed held"
            gc.collect()
    finally:
        world.close()
    # let go by unlocking, not by the garbage collector closing a connection left open
    assert not [w for w in seen if "deleted while still open" in str(w.message)]
