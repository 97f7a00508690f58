from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
# A developer's own world must not capture the tests' commands: each test that wants the
# PostgreSQL world says so (the world_kind and postgres_url fixtures).
os.environ.pop("LWTOOL_WORLD", None)

MINIMAL_HEADER = {
    "apiVersion": "littleworkflow.dev/v0.1",
    "kind": "Workflow",
    "metadata": {"name": "t"},
    "permissions": {"models": ["gpt-4o-mini"], "tools": ["t"]},
}


def used_tools(steps: list[Any]) -> list[str]:
    """The tool names a step list's tool.call steps name (parallel bodies included)."""
    found: set[str] = set()
    todo = list(steps)
    while todo:
        step = todo.pop()
        if not isinstance(step, dict):
            continue
        with_ = step.get("with")
        if step.get("uses") == "tool.call" and isinstance(with_, dict) and isinstance(
                with_.get("tool"), str):
            found.add(with_["tool"])
        if isinstance(step.get("steps"), list):
            todo.extend(step["steps"])
    return sorted(found)


def permitted(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with `permissions.tools` extended by the tools it calls (for tests about
    anything but permissions.unknown_tool)."""
    permissions = dict(doc.get("permissions") or {})
    listed = permissions.get("tools") or []
    permissions["tools"] = sorted(set(listed) | set(used_tools(doc.get("steps") or [])))
    return {**doc, "permissions": permissions}


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None,
            env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `lwtool` as a user would: a real subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "lwtool", *args], cwd=cwd or ROOT,
                          input=stdin, capture_output=True, text=True, env=full_env,
                          timeout=timeout)


def edit_store(data_dir: Path, *statements: str, rechain: str | None) -> None:
    """Edit a data dir's event store behind lwtool's back, as a careless user would.
    The statements address events by seq: the store's packed rows (the events of one
    commit in a row) are written out first as one row an event, as stores before packed
    rows held them, their chain recomputed (`unpack_rows`). `rechain` names a run whose
    hash chain is then recomputed (an edit that keeps the chain intact); None leaves
    the chain as the edit left it."""
    import sqlite3

    from lwtool.world.local_store import chain_run

    conn = sqlite3.connect(data_dir / "events" / "events.db", isolation_level=None)
    try:
        conn.execute("BEGIN")
        unpack_rows(conn)
        for statement in statements:
            conn.execute(statement)
        if rechain is not None:
            chain_run(conn, rechain)
        conn.execute("COMMIT")
    finally:
        conn.close()


def unpack_rows(conn: Any) -> None:
    """Rewrite every packed row of the store as one row an event (the layout before
    packed rows; the id keyed as the run's number and the event's seq where the store
    has ids) and chain the runs that had any again, as lwtool before packed rows did."""
    from lwtool.canonical.compact import dumps_text
    from lwtool.world.chain import PACKED
    from lwtool.world.local_events import INSERT, INSERT_KEYED, KEY_SPAN, events_of
    from lwtool.world.local_store import chain_run, event_columns

    keyed = "id" in event_columns(conn)
    for run_id, run_no in conn.execute(
            f"SELECT run_id, {'run_no' if keyed else 'NULL'} FROM runs").fetchall():
        rows = conn.execute("SELECT seq, type, step_path, payload, at, hash FROM events "
                            "WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
        if not any(str(row[5]).startswith(PACKED) for row in rows):
            continue
        conn.execute("DELETE FROM events WHERE run_id = ?", (run_id,))
        for event in events_of(run_id, rows):
            row = (run_id, event.seq, event.type, event.step_path,
                   dumps_text(event.payload), event.at, None)
            if keyed:
                conn.execute(INSERT_KEYED, (run_no * KEY_SPAN + event.seq, *row))
            else:
                conn.execute(INSERT, row)
        chain_run(conn, run_id)


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(params=["strict", "process"])
def durability(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per durability mode: `lwtool run` started by it reads
    LWTOOL_DURABILITY (a resumed run keeps the mode it started with)."""
    monkeypatch.setenv("LWTOOL_DURABILITY", request.param)
    return str(request.param)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The PostgreSQL server of the session (tests/fixtures/postgres.py)."""
    from tests.fixtures.postgres import postgres_server as server

    with server() as url:
        yield url


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A database of the test's own (dropped after it)."""
    from tests.fixtures.postgres import database

    with database(postgres_server) as url:
        yield url


class Worlds:
    """Where the `lwtool` commands a test starts keep their runs: the local data dir
    they are given, or (PostgreSQL) a database of their own per data dir, so a test
    that uses several data dirs keeps them apart as it does locally."""

    _active: list[Worlds] = []  # the world_kind fixtures of the tests now running

    def __init__(self, kind: str, server: str | None) -> None:
        self.kind, self.server = kind, server
        self._open: dict[str, Any] = {}

    @classmethod
    def current(cls) -> Worlds:
        """The running test's worlds (its world_kind), else the local world: helpers
        other modules borrow run as they always did."""
        return cls._active[-1] if cls._active else LOCAL

    def env(self, data_dir: Path) -> dict[str, str]:
        """LWTOOL_WORLD for commands on `data_dir` (nothing for the local world)."""
        if self.server is None:
            return {}
        key = str(data_dir)
        if key not in self._open:
            from tests.fixtures.postgres import database

            manager = database(self.server)
            self._open[key] = (manager, manager.__enter__())
        return {"LWTOOL_WORLD": self._open[key][1]}

    def world(self, data_dir: Path, **options: Any) -> Any:
        """A world object for in-process tests: the local one at `data_dir`, or a
        PostgreSQL world on that data dir's own database."""
        if self.server is None:
            from lwtool.world.local import local_world

            return local_world(data_dir, **options)
        from lwtool.world.postgres import postgres_world

        return postgres_world(self.env(data_dir)["LWTOOL_WORLD"], data_dir, **options)

    def close(self) -> None:
        for manager, _ in self._open.values():
            manager.__exit__(None, None, None)


LOCAL = Worlds("local", None)


@pytest.fixture(params=["local", "postgres"])
def world_kind(request: pytest.FixtureRequest,
               monkeypatch: pytest.MonkeyPatch) -> Iterator[Worlds]:
    """Run the test once per world; its helpers find it as `Worlds.current()` (commands
    take LWTOOL_WORLD from `.env(data_dir)`, in-process tests a world from `.world()`)."""
    monkeypatch.delenv("LWTOOL_WORLD", raising=False)
    server = request.getfixturevalue("postgres_server") if request.param == "postgres" \
        else None
    worlds = Worlds(str(request.param), server)
    Worlds._active.append(worlds)
    yield worlds
    Worlds._active.remove(worlds)
    worlds.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark `clients` the tests that drive a real editor or browser (tests/clients, and
    any test using the `browser` fixture): `-m "not clients"` is the inner loop's."""
    for item in items:
        if "clients" in item.path.parts or "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.clients)


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's headless Chromium through Playwright (no browser download). Skipped
    where chromium is missing, unless LWTOOL_REQUIRE_BROWSER is set (.ci/run sets it).
    Playwright's sync API runs an event loop in this thread while it is open: it is
    closed with each module, so later tests can use asyncio.run."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        if os.environ.get("LWTOOL_REQUIRE_BROWSER"):
            pytest.fail("chromium is required here (apt-get install chromium)")
        pytest.skip("no chromium (Debian package chromium; .ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()
