"""A WorkflowVersion's record (lwtool.lock.version_record) in both worlds: written with
the version, the first one stays, read back as written; a local store made before
records gains their table on open (a read-only one has none), an edited record is
damage; and what the record holds: the validator's findings, each permitted tool's
schema hash, and which tools here drift from it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lwtool.canonical.digest import workflow_version_id
from lwtool.lock.version_record import (
    capability_snapshot,
    drifted,
    pin_needs,
    surface_hash,
    validated_meta,
    version_meta,
)
from lwtool.runtime.needs import describe
from lwtool.tools import ToolRegistry
from lwtool.world.base import StoreDamaged, World
from lwtool.world.local import LocalWorld

LWIR: dict[str, Any] = {
    "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
    "metadata": {"name": "records"},
    "permissions": {"tools": ["echo", "spare"], "models": ["fast"]},
    "steps": [{"id": "a", "uses": "tool.call", "with": {"tool": "echo", "args": {}}},
              {"id": "b", "uses": "ai.generate", "needs": ["a"], "with": {
                  "model": "fast", "prompt": "{{ steps.a.output }}"}}]}
VERSION = workflow_version_id(LWIR)


def _tools(description: str = "v1") -> ToolRegistry:
    registry = ToolRegistry()
    registry.register("echo", lambda args: args, input_schema={
        "type": "object", "description": description})
    return registry


@pytest.fixture(params=["local", "postgres"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    if request.param == "local":
        opened: World = LocalWorld(tmp_path / "data")
    else:
        from lwtool.world.postgres import PostgresWorld

        opened = PostgresWorld(request.getfixturevalue("postgres_url"), tmp_path / "data")
    try:
        yield opened
    finally:
        opened.close()


def test_the_first_record_stays_and_reads_back(world: World) -> None:
    calls: list[str] = []

    def record(name: str) -> dict[str, Any]:
        calls.append(name)
        return {**validated_meta(LWIR, _tools(name).tools), "from": name}

    world.register_version(VERSION, LWIR)  # without a record first (as before records)
    assert world.version_meta(VERSION) is None
    world.register_version(VERSION, LWIR, meta=lambda: record("first"))
    world.register_version(VERSION, LWIR, meta=lambda: record("second"))
    meta = world.version_meta(VERSION)
    assert calls == ["first"] and meta is not None and meta["from"] == "first"
    assert meta["validation"] == {"ok": True, "errors": 0, "findings": [],
                                  "portable": {"ok": True, "extensions": []}}
    assert meta["capabilities"] == {"tools": {"echo": surface_hash(_tools("first").tools[
        "echo"]), "spare": None}, "models": ["fast"]}
    assert world.version_meta("sha256:" + "4" * 64) is None


def test_a_store_made_before_records_gains_their_table(tmp_path: Path) -> None:
    LocalWorld(tmp_path / "data").close()
    db = tmp_path / "data" / "events" / "events.db"
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE version_meta")
    conn.commit()
    conn.close()
    old = LocalWorld(tmp_path / "data", read_only=True)
    assert old.version_meta(VERSION) is None  # nothing to read, nothing written
    old.close()
    world = LocalWorld(tmp_path / "data")
    world.register_version(VERSION, LWIR, meta=lambda: validated_meta(LWIR, None))
    assert world.version_meta(VERSION)["capabilities"]["tools"] == {"echo": None,
                                                                   "spare": None}
    world.close()


def test_an_edited_record_is_damage(tmp_path: Path) -> None:
    world = LocalWorld(tmp_path / "data")
    world.register_version(VERSION, LWIR, meta=lambda: validated_meta(LWIR, None))
    world.close()
    conn = sqlite3.connect(tmp_path / "data" / "events" / "events.db")
    conn.execute("UPDATE version_meta SET meta = '[1, 2'")
    conn.commit()
    conn.close()
    world = LocalWorld(tmp_path / "data")
    with pytest.raises(StoreDamaged, match="the record of WorkflowVersion .* is damaged"):
        world.version_meta(VERSION)
    world.close()
    from tests.conftest import run_cli

    verified = run_cli("verify", "--data-dir", str(tmp_path / "data"))
    assert verified.returncode == 1 and f"{VERSION}: damaged: the record of " \
        "WorkflowVersion" in verified.stdout, verified


def test_the_record_holds_findings_portability_and_what_drifts() -> None:
    from lwtool.source.finding import Finding, Severity
    from lwtool.source.position import FILE_START

    warning = Finding("x.warned", "a warning", "f", "/steps/0", FILE_START, Severity.WARNING)
    kept = version_meta(LWIR, [warning], None)["validation"]
    assert kept["ok"] is True and kept["findings"] == [{
        "code": "x.warned", "severity": "warning", "pointer": "/steps/0",
        "message": "a warning"}]
    assert kept["portable"] == {"ok": True, "extensions": []}
    timed = {**LWIR, "steps": [{**LWIR["steps"][0], "timeoutMs": 500}, LWIR["steps"][1]]}
    portable = validated_meta(timed, None)["validation"]["portable"]
    assert portable["ok"] is False and [e["pointer"] for e in portable["extensions"]] == [
        "/steps/0/timeoutMs"], portable
    warned = {**LWIR, "permissions": {**LWIR["permissions"], "tools": ["echo", "unused"]}}
    meta = validated_meta(warned, _tools().tools)
    same, other = _tools("v1").tools, _tools("v2").tools
    assert drifted(meta, same) == {}
    assert drifted(meta, other) == {"echo": meta["capabilities"]["tools"]["echo"]}
    assert drifted(meta, {}) == {}  # a missing tool is MissingTools, not drift
    assert drifted(validated_meta(warned, None), other) == {}  # nothing pinned
    snapshot = capability_snapshot(LWIR, same)
    assert snapshot == capability_snapshot(LWIR, _tools("v1").tools)  # stable
    needs = ["echo", *pin_needs({"echo": snapshot["tools"]["echo"]}), "model slot fast"]
    assert describe(needs) == (f"tool echo (schemas {snapshot['tools']['echo'][:15]}) "
                               "and model slot fast")


def test_lwtool_version_prints_the_record_of_a_run_or_an_id(tmp_path: Path) -> None:
    from tests.conftest import run_cli

    data = str(tmp_path / "data")
    ran = run_cli("run", "examples/refine-loop.lwir.yaml", "--input",
                  "examples/inputs/refine-loop.json", "--tools", "examples/tools.py:tools",
                  "--data-dir", data, "--run-id", "loop", "--quiet")
    assert ran.returncode == 0, ran.stderr
    shown = run_cli("version", "loop", "--data-dir", data)
    lines = shown.stdout.splitlines()
    assert shown.returncode == 0 and lines[0].endswith("  refine-loop"), shown
    assert lines[1].startswith("  validated by lwtool ") and "valid, 0 finding(s)" in lines[1]
    assert lines[2].startswith("  capability snapshot sha256:")
    assert [line.split(":")[0] for line in lines[3:6]] == [
        "    tool checkText", "    tool improve", "    tool publish"]
    assert all("sha256:" in line for line in lines[3:6])
    digits = lines[0].split()[0].removeprefix("sha256:")[:12]
    by_id = run_cli("version", digits, "--data-dir", data, "--json")
    record = json.loads(by_id.stdout)
    assert record["workflowVersionId"] == lines[0].split()[0]
    assert record["record"]["capabilitiesHash"] == lines[2].split()[-1]
    unknown = run_cli("version", "nope", "--data-dir", data)
    assert unknown.returncode == 2 and "no version or run nope" in unknown.stderr
