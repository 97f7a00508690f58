"""Fuzz: hostile tool return values and hostile edits of a store never end in an
unexpected exception (what the CLI would print as a traceback).

1. A tool returns any Python value (nested dicts with any keys, tuples, sets, bytes,
   NaN, huge integers, lone surrogates, objects...). The run either completes, with an
   output that is strict JSON and the same after a replay that calls nothing, or fails
   with `step_schema_error`; it never stays `running`.
2. A finished run's store is edited at random (any column of any row set to any value,
   rows deleted, the database file truncated or its bytes flipped, artifact files
   rewritten, removed or replaced), with the hash chain recomputed or not. Reading the
   run, replaying it and verifying the store then either work or raise one of the
   errors lwtool reports in one sentence.

The example count comes from LWTOOL_FUZZ_EXAMPLES (CI: the default; the closing
figures were taken with 5,000 each).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import shutil
import sqlite3
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lwtool import RunFailedError, local_world, replay_run, run_workflow
from lwtool.record.errors import NondeterminismError
from lwtool.world.base import WorldError
from lwtool.world.local import LocalWorld
from lwtool.world.local_store import chain_run
from lwtool.world.verify import verify
from tests.conftest import MINIMAL_HEADER, permitted

EXAMPLES = int(os.environ.get("LWTOOL_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
REPORTED = (RunFailedError, WorldError, NondeterminismError)  # one sentence, exit 1/2


def _doc(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return permitted({**copy.deepcopy(MINIMAL_HEADER), "permissions": {"models": []},
                      "steps": steps})


class Weird:
    def __repr__(self) -> str:
        return "<weird>"


_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
    st.sampled_from(["\ud800", "a\udfffb", "\x00", "\u202e", "\x1b[31m"]),
    st.binary(max_size=4), st.builds(Weird), st.decimals(allow_nan=True, places=2),
    st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=4))
_key = st.one_of(st.text(max_size=4), st.integers(-3, 3), st.booleans(), st.none(),
                 st.sampled_from(["\ud800", "$ref", ""]), st.tuples(st.integers(0, 2)))
_hashable = st.one_of(st.integers(-3, 3), st.text(max_size=3), st.booleans())
VALUES = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner), st.frozensets(_hashable, max_size=3),
    st.sets(_hashable, max_size=3), st.dictionaries(_key, inner, max_size=4)), max_leaves=16)

HOSTILE = _doc([
    {"id": "p", "uses": "tool.call", "with": {"tool": "hostile"}, "input": {}},
    {"id": "q", "uses": "tool.call", "needs": ["p"], "with": {"tool": "echo"},
     "input": {"got": "{{ steps.p.output }}"}},
])


@FUZZ
@given(value=VALUES)
def test_any_tool_value_completes_as_json_or_fails_clearly(value: Any) -> None:
    calls: list[str] = []

    def hostile(args: Any) -> Any:
        calls.append("hostile")
        return value

    def echo(args: Any) -> Any:
        calls.append("echo")
        return args

    tools = {"hostile": hostile, "echo": echo}
    with tempfile.TemporaryDirectory() as folder:
        world = local_world(Path(folder) / "data")
        try:
            live = asyncio.run(run_workflow(HOSTILE, {}, world=world, tools=tools,
                                            run_id="run_h"))
        except RunFailedError as exc:
            assert exc.cause_code == "step_schema_error", exc
            assert world.get_run("run_h").status == "failed"
            with pytest.raises(RunFailedError):
                asyncio.run(replay_run("run_h", world=world, tools=tools))
            assert calls == ["hostile"]
            return
        text = json.dumps(live["output"], allow_nan=False)  # strict JSON or it raises
        assert json.loads(text) == live["output"]
        again = asyncio.run(replay_run("run_h", world=world, tools=tools))
        assert again["output"] == live["output"]
        assert calls == ["hostile", "echo"]


# -- store edits ---------------------------------------------------------------------

LOOP = _doc([
    {"id": "big", "uses": "tool.call", "with": {"tool": "big"}, "input": {}},
    {"id": "grow", "uses": "tool.call", "needs": ["big"], "maxVisits": 3,
     "with": {"tool": "grow"},
     "input": {"n": "{{ coalesce(steps.grow.lastOutput.n, 0) }}"}},
    {"id": "again", "uses": "decision", "needs": ["grow"], "maxVisits": 3,
     "with": {"cases": [{"when": "{{ steps.grow.lastOutput.n >= 3 }}", "to": "end"}],
              "default": "grow"}},
])
TOOLS = {"big": lambda args: "z" * 300_000, "grow": lambda args: {"n": args["n"] + 1}}
TABLES = {"events": ["run_id", "seq", "type", "step_path", "payload", "at", "hash"],
          "runs": ["run_id", "version_id", "status", "created_at", "updated_at", "input",
                   "options", "last_seq", "last_hash"],
          "versions": ["version_id", "lwir"], "artifacts": ["ref", "data"]}
_sql_value = st.one_of(st.none(), st.integers(-2, 10**12), st.floats(allow_nan=True),
                       st.text(max_size=12), st.binary(max_size=12),
                       st.sampled_from(['{}', '[]', 'null', '{"stepId": 5}', '"x"',
                                        '{"envelope": {"outputRef": "file:///dev/zero"}}',
                                        '{"envelope": 3, "stepId": "grow", "uses": "x"}',
                                        'running', 'completed', 'failed', 'StepCompleted',
                                        'RunCompleted', 'grow.visit[9]', 'artifact://x']))
EDITS = st.lists(st.one_of(
    st.tuples(st.just("set"), st.sampled_from(sorted(TABLES)), st.integers(0, 99),
              st.integers(0, 8), _sql_value),
    st.tuples(st.just("delete"), st.sampled_from(sorted(TABLES)), st.integers(0, 99)),
    st.tuples(st.just("truncate"), st.integers(0, 200_000)),
    st.tuples(st.just("flip"), st.integers(0, 200_000)),
    st.tuples(st.just("artifact"), st.sampled_from(["rewrite", "remove", "folder", "empty"])),
), min_size=1, max_size=3)


@pytest.fixture(scope="module")
def template() -> Any:
    """A data dir with one run of LOOP, its RunCompleted cut off so replay has work."""
    folder = Path(tempfile.mkdtemp(prefix="lwtool-fuzz-"))
    world = LocalWorld(folder / "data")
    asyncio.run(run_workflow(LOOP, {}, world=world, tools=TOOLS, run_id="run_t"))
    world.close()
    db = sqlite3.connect(folder / "data" / "events" / "events.db", isolation_level=None)
    db.execute("DELETE FROM events WHERE type = 'RunCompleted'")
    db.execute("UPDATE runs SET status = 'running'")
    chain_run(db, "run_t")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    yield folder / "data"
    shutil.rmtree(folder, ignore_errors=True)


def _apply(data: Path, edit: tuple[Any, ...], rechain: bool) -> None:
    db_path = data / "events" / "events.db"
    kind = edit[0]
    if kind in ("set", "delete"):
        table = edit[1]
        db = sqlite3.connect(db_path, isolation_level=None)
        try:
            keys = _keys(db, table)
            if not keys:
                return
            where, params = keys[edit[2] % len(keys)]
            if kind == "delete":
                db.execute(f"DELETE FROM {table} WHERE {where}", params)
            else:
                column = TABLES[table][edit[3] % len(TABLES[table])]
                try:
                    db.execute(f"UPDATE {table} SET {column} = ? WHERE {where}",
                               (edit[4], *params))
                except sqlite3.DatabaseError:
                    return  # a constraint refused it: no edit
            if rechain:
                try:
                    chain_run(db, "run_t")
                except TypeError:
                    pass  # a value no chain can cover (bytes): the edit stays unchained
        finally:
            db.close()
    elif kind in ("truncate", "flip"):
        for name in ("events.db-wal", "events.db-shm"):
            (db_path.parent / name).unlink(missing_ok=True)
        blob = bytearray(db_path.read_bytes())
        if not blob:
            return
        at = edit[1] % len(blob)
        if kind == "truncate":
            del blob[at:]
        else:
            blob[at] ^= 0xFF
        db_path.write_bytes(bytes(blob))
    else:
        files = [p for p in (data / "artifacts").rglob("*") if p.is_file()]
        for path in files:
            path.chmod(0o600)
            if edit[1] == "rewrite":
                path.write_bytes(b'"forged"')
            elif edit[1] == "empty":
                path.write_bytes(b"")
            else:
                path.unlink()
                if edit[1] == "folder":
                    path.mkdir()


def _keys(db: sqlite3.Connection, table: str) -> list[tuple[str, tuple[Any, ...]]]:
    if table == "events":
        return [("run_id = ? AND seq = ?", row) for row in
                db.execute("SELECT run_id, seq FROM events ORDER BY seq")]
    column = {"runs": "run_id", "versions": "version_id", "artifacts": "ref"}[table]
    return [(f"{column} = ?", row) for row in
            db.execute(f"SELECT {column} FROM {table} ORDER BY {column}")]


@FUZZ
@given(edits=EDITS, rechain=st.booleans())
def test_any_store_edit_is_reported_never_a_crash(template: Path, edits: list[Any],
                                                  rechain: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data"
        shutil.copytree(template, data)
        for edit in edits:
            try:
                _apply(data, edit, rechain)
            except (sqlite3.DatabaseError, UnicodeDecodeError):
                break  # the edit itself found the file unreadable: what we test next
        for action in (_read, _replay, _verify):
            try:
                action(data)
            except REPORTED:
                pass


def _read(data: Path) -> None:
    world = LocalWorld(data)
    try:
        world.list_runs()
        world.get_run("run_t")
        world.events("run_t")
    finally:
        world.close()


def _replay(data: Path) -> None:
    world = LocalWorld(data)
    try:
        result = asyncio.run(replay_run("run_t", world=world, tools=TOOLS))
        json.dumps(result, allow_nan=False)
    finally:
        world.close()


def _verify(data: Path) -> None:
    world = LocalWorld(data)
    try:
        verify(world)
    finally:
        world.close()


def test_values_that_are_not_json_are_refused_not_coerced() -> None:
    """Anchors for the property above: these must fail, not be turned into something."""
    for value in ({1: "a"}, {"x": b"raw"}, {"s": {1, 2}}, float("nan"), 2**60, "\ud800",
                  Decimal("1.5"), Weird()):
        def hostile(args: Any, value: Any = value) -> Any:
            return value

        with tempfile.TemporaryDirectory() as folder:
            with pytest.raises(RunFailedError) as info:
                asyncio.run(run_workflow(HOSTILE, {}, world=local_world(Path(folder) / "d"),
                                         tools={"hostile": hostile, "echo": lambda a: a}))
            assert info.value.cause_code == "step_schema_error", value
