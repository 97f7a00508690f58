"""Golden event logs: a committed history replays to its recorded output without
calling anything it recorded, a cut history calls only what comes after the cut, and a
tampered history is refused (temporalio-style replay tests). In both worlds: the local
one and PostgreSQL (the world_kind fixture)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool.canonical.digest import workflow_version_id
from lwtool.record.errors import NondeterminismError
from lwtool.runtime.api import load_lwir
from lwtool.runtime.interpreter import resume_run
from lwtool.tools import ToolRegistry
from lwtool.world.base import NewEvent
from tests.conftest import ROOT, Worlds

HISTORY = Path(__file__).parent / "histories" / "refine-loop.jsonl"
LWIR = load_lwir(ROOT / "examples" / "refine-loop.lwir.yaml")
EXPECTED = {"text": "golden!!!", "rounds": 3}


def _history() -> list[dict[str, Any]]:
    return [json.loads(line) for line in HISTORY.read_text().splitlines()]


def _world_with(tmp_path: Path, records: list[dict[str, Any]]) -> Any:
    """A fresh world holding `records` as run `run_golden` (artifacts rebuilt from the
    inline outputs, each checked against its content address)."""
    world = Worlds.current().world(tmp_path / "data")
    version = workflow_version_id(LWIR)
    assert records[0]["payload"]["workflowVersionId"] == version, "the example changed"
    world.register_version(version, LWIR)
    first, rest = records[0], records[1:]
    world.create_run("run_golden", version, {"text": "golden"}, {"models": {}},
                     [NewEvent(first["type"], first["payload"], first["stepPath"])])
    artifacts = []
    for record in rest:
        envelope = record["payload"].get("envelope")
        if envelope and "output" in envelope:
            data = json.dumps(envelope["output"], ensure_ascii=False,
                              separators=(",", ":")).encode()
            assert envelope["outputRef"] == "artifact://sha256:" + hashlib.sha256(
                data).hexdigest()
            artifacts.append((envelope["outputRef"], data))
    world.append("run_golden", [NewEvent(r["type"], r["payload"], r["stepPath"]) for r in rest],
                 artifacts=artifacts)
    return world


def _tools(calls: list[str], allowed: bool) -> ToolRegistry:
    registry = ToolRegistry()

    def make(name: str, fn: Any) -> Any:
        def tool(args: Any) -> Any:
            if not allowed:
                raise AssertionError(f"replay called {name}")
            calls.append(name)
            return fn(args)
        return tool

    registry.register("improve", make("improve", lambda a: {"text": a["text"] + "!"}))
    registry.register("checkText", make("checkText", lambda a: {
        "ok": a["text"].count("!") >= 3, "text": a["text"]}))
    registry.register("publish", make("publish", lambda a: a))
    return registry


def test_full_history_replays_without_calling_anything(tmp_path: Path, world_kind: str) -> None:
    records = [r for r in _history() if r["type"] != "RunCompleted"]
    world = _world_with(tmp_path, records)
    result = asyncio.run(resume_run(world, "run_golden", _tools([], allowed=False), {}))
    assert result["output"] == EXPECTED


def test_cut_history_calls_only_what_follows_the_cut(tmp_path: Path, world_kind: str) -> None:
    records = _history()
    cut = next(i for i, r in enumerate(records)
               if r["type"] == "StepCompleted" and r["stepPath"] == "check.visit[1]")
    world = _world_with(tmp_path, records[: cut + 1])
    calls: list[str] = []
    result = asyncio.run(resume_run(world, "run_golden", _tools(calls, allowed=True), {}))
    assert result["output"] == EXPECTED
    assert calls == ["improve", "checkText", "publish"]


def test_tampered_history_is_refused(tmp_path: Path, world_kind: str) -> None:
    records = [r for r in _history() if r["type"] != "RunCompleted"]
    for record in records:
        if record["type"] == "StepCompleted" and record["stepPath"] == "improve.visit[1]":
            record["payload"]["stepId"] = "rewrite"
    world = _world_with(tmp_path, records)
    with pytest.raises(NondeterminismError, match="rewrite"):
        asyncio.run(resume_run(world, "run_golden", _tools([], allowed=False), {}))
