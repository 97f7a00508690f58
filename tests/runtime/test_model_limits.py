"""Model limits: a models file entry `{model, maxConcurrent, rpm, tpm}` bounds the calls
to that model across every step of the process; a call that waits says why
(`harness.model.waiting`), and a malformed entry is a one-line usage error."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from lwtool.calls import limits
from lwtool.calls.limits import Limiter, ModelLimits
from tests.conftest import run_cli
from tests.fixtures.openai_server import fixture_server

FAN = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: fan}
permissions: {models: [writer]}
steps:
  - id: each
    uses: parallel
    with: {items: [a, b, c, d], maxBranches: 4, maxConcurrency: 4}
    steps:
      - {id: say, uses: ai.generate, with: {model: writer, prompt: "{{ item }}"}}
"""


def test_max_concurrent_holds_across_branches(tmp_path: Path) -> None:
    (tmp_path / "wf.lwir.yaml").write_text(FAN)
    (tmp_path / "models.yaml").write_text(
        "writer: {model: openai/gpt-4o-mini, maxConcurrent: 1}\n")
    with fixture_server(["1", "2", "3", "4"], delay=0.2) as server:
        env = {"OPENAI_API_BASE": server.base_url, "OPENAI_BASE_URL": server.base_url,
               "OPENAI_API_KEY": "sk-fixture"}
        started = time.monotonic()
        done = run_cli("run", "wf.lwir.yaml", "-i", "-", "--models", "models.yaml",
                       "--data-dir", "data", "--run-id", "r", cwd=tmp_path, stdin="{}",
                       env=env)
        took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 4 and took >= 0.8  # one at a time: 4 x 0.2 s
    waits = [json.loads(line)["payload"] for line in run_cli(
        "events", "r", "--type", "harness.model.waiting", "--json", "--data-dir", "data",
        cwd=tmp_path).stdout.splitlines()]
    assert len(waits) == 3 and all(w["reason"].startswith("maxConcurrent 1") for w in waits)


def test_rpm_and_tpm_make_a_call_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "WINDOW", 0.3)
    said: list[str] = []

    async def three(limiter: Limiter, tokens: int) -> float:
        started = time.monotonic()
        for _ in range(3):
            async with limiter.slot(said.append):
                limiter.used(tokens)
        return time.monotonic() - started

    assert asyncio.run(three(Limiter(ModelLimits(rpm=2)), 0)) >= 0.3
    assert said == ["rpm 2: that many calls started in the last minute"]
    said.clear()
    assert asyncio.run(three(Limiter(ModelLimits(tpm=100)), 60)) >= 0.3
    assert said == ["tpm 100: that many tokens used in the last minute"]


@pytest.mark.parametrize(("entry", "said"), [
    ("writer: {model: openai/x, rpm: 0}", "slot 'writer': rpm must be a positive integer"),
    ("writer: {model: openai/x, burst: 3}", "slot 'writer' must be a model string or"),
    ("writer: {rpm: 3}", "slot 'writer' must be a model string or"),
])
def test_a_malformed_entry_is_one_line(tmp_path: Path, entry: str, said: str) -> None:
    (tmp_path / "wf.lwir.yaml").write_text(FAN)
    (tmp_path / "models.yaml").write_text(entry + "\n")
    done = run_cli("run", "wf.lwir.yaml", "-i", "-", "--models", "models.yaml",
                   "--data-dir", "data", cwd=tmp_path, stdin="{}")
    assert done.returncode == 2 and said in done.stderr
    assert done.stderr.count("\n") == 1


def test_limits_hold_across_threads_each_running_its_own_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`lwtool worker` runs each claimed run on a loop and thread of its own: the look
    at the limits and the taking of a place are one step, so two threads never both
    see a free place (the look is slowed here to widen the window)."""
    import threading

    limiter = Limiter(ModelLimits(max_concurrent=1))
    look = Limiter._blocked

    def slow_look(self: Limiter, now: float) -> str | None:
        why = look(self, now)
        time.sleep(0.005)  # another thread looks meanwhile
        return why

    monkeypatch.setattr(Limiter, "_blocked", slow_look)
    seen: list[int] = []

    async def call() -> None:
        async with limiter.slot(lambda _: None):
            seen.append(limiter.in_flight)
            await asyncio.sleep(0.02)

    threads = [threading.Thread(target=asyncio.run, args=(call(),)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert len(seen) == 4 and max(seen) == 1 and limiter.in_flight == 0
