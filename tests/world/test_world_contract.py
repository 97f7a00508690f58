"""The World contract, run against every implementation (the local world now; a
PostgreSQL world joins WORLDS later and must pass the same tests)."""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lwtool.canonical.digest import workflow_version_id
from lwtool.world.base import NewEvent, RunLocked, RunNotFound, StoreDamaged, World, WorldError
from lwtool.world.local import LocalWorld

WORLDS: dict[str, Callable[[Path], World]] = {
    "local": lambda folder: LocalWorld(folder / "data"),
}


@pytest.fixture(params=sorted(WORLDS))
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return WORLDS[request.param](tmp_path)


def _start(world: World, run_id: str = "run_a") -> None:
    world.register_version(workflow_version_id({"kind": "Workflow"}), {"kind": "Workflow"})
    world.create_run(run_id, workflow_version_id({"kind": "Workflow"}), {"x": 1}, {"models": {}},
                     [NewEvent("RunStarted", {"n": 0})])


def test_versions_round_trip_and_are_immutable(world: World) -> None:
    version = workflow_version_id({"a": 1})
    world.register_version(version, {"a": 1})
    world.register_version(version, {"a": 2})  # same id: the first one stays
    assert world.get_version(version) == {"a": 1}
    wrong = "sha256:" + "3" * 64
    world.register_version(wrong, {"a": 3})  # not its hash: refused when read back
    with pytest.raises(StoreDamaged, match="no longer hashes to its id"):
        world.get_version(wrong)
    assert world.get_version("sha256:" + "2" * 64) is None


def test_events_are_numbered_in_commit_order(world: World) -> None:
    _start(world)
    world.append("run_a", [NewEvent("A", {"i": 1}, "s1"), NewEvent("B", {"i": 2}, "s1")])
    world.append("run_a", [NewEvent("A", {"i": 3}, "s2")], status="completed")
    events = world.events("run_a")
    assert [(e.seq, e.type, e.step_path, e.payload) for e in events] == [
        (1, "RunStarted", None, {"n": 0}), (2, "A", "s1", {"i": 1}),
        (3, "B", "s1", {"i": 2}), (4, "A", "s2", {"i": 3})]
    assert [e.seq for e in world.events("run_a", ["A"])] == [2, 4]
    record = world.get_run("run_a")
    assert record.status == "completed" and record.input == {"x": 1}
    assert [r.run_id for r in world.list_runs()] == ["run_a"]


def test_unknown_and_duplicate_runs(world: World) -> None:
    with pytest.raises(RunNotFound):
        world.get_run("run_missing")
    with pytest.raises(RunNotFound):
        world.append("run_missing", [NewEvent("A", {})])
    _start(world)
    with pytest.raises(WorldError):
        _start(world)


def test_artifacts_are_content_addressed(world: World) -> None:
    small, large = b'{"a":1}', b"x" * (300 * 1024)
    refs = [asyncio.run(world.put_artifact(data)) for data in (small, large, small)]
    assert refs[0] == refs[2] and refs[0].startswith("artifact://sha256:")
    assert asyncio.run(world.get_artifact(refs[0])) == small
    assert asyncio.run(world.get_artifact(refs[1])) == large


def test_artifacts_committed_with_events(world: World) -> None:
    _start(world)
    ref = "artifact://sha256:" + hashlib.sha256(b"payload").hexdigest()
    world.append("run_a", [NewEvent("StepCompleted", {"outputRef": ref})],
                 artifacts=[(ref, b"payload")])
    assert asyncio.run(world.get_artifact(ref)) == b"payload"


def test_a_mislabelled_artifact_is_refused_on_read(world: World) -> None:
    _start(world)
    ref = "artifact://sha256:" + "a" * 64
    world.append("run_a", [NewEvent("StepCompleted", {"outputRef": ref})],
                 artifacts=[(ref, b"payload")])
    with pytest.raises(StoreDamaged, match="does not match its hash"):
        asyncio.run(world.get_artifact(ref))


def test_local_store_edits_are_detected_and_healed(tmp_path: Path) -> None:
    """An inline artifact or a version edited in the database is refused on read; storing
    the same content again repairs the artifact (it used to be trusted, and even flowed
    into new runs)."""
    import sqlite3

    world = LocalWorld(tmp_path / "data")
    small = asyncio.run(world.put_artifact(b"the real bytes"))
    large = asyncio.run(world.put_artifact(b"x" * 300_000))
    version = workflow_version_id({"a": 1})
    world.register_version(version, {"a": 1})
    db = sqlite3.connect(tmp_path / "data" / "events" / "events.db")
    db.execute("UPDATE artifacts SET data = ? WHERE ref = ?", (b"forged", small))
    db.execute("UPDATE versions SET lwir = ? WHERE version_id = ?", ('{"a": 2}', version))
    db.commit()
    db.close()
    digest = large.removeprefix("artifact://sha256:")
    file = tmp_path / "data" / "artifacts" / "sha256" / digest[:2] / digest
    file.write_bytes(b"y" * 300_000)
    for ref in (small, large):
        with pytest.raises(StoreDamaged, match="does not match its hash"):
            asyncio.run(world.get_artifact(ref))
    with pytest.raises(StoreDamaged, match="no longer hashes to its id"):
        world.get_version(version)
    assert asyncio.run(world.put_artifact(b"the real bytes")) == small
    assert asyncio.run(world.put_artifact(b"x" * 300_000)) == large
    assert asyncio.run(world.get_artifact(small)) == b"the real bytes"
    assert asyncio.run(world.get_artifact(large)) == b"x" * 300_000


def _hold(data_dir: str, ready: Any, release: Any) -> None:
    world = LocalWorld(data_dir)
    with world.lock_run("run_a"):
        ready.set()
        release.wait(30)


def test_a_run_lock_excludes_other_processes(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "data")
    LocalWorld(data_dir)
    context = multiprocessing.get_context("spawn")
    ready, release = context.Event(), context.Event()
    holder = context.Process(target=_hold, args=(data_dir, ready, release))
    holder.start()
    try:
        assert ready.wait(30)
        with pytest.raises(RunLocked, match="another process"):
            with LocalWorld(data_dir).lock_run("run_a"):
                pass
    finally:
        release.set()
        holder.join(30)
    with LocalWorld(data_dir).lock_run("run_a"):
        pass  # free again once the holder is gone


def test_local_layout(tmp_path: Path) -> None:
    """The spec's Local World layout, spelled out here (not read from the code)."""
    LocalWorld(tmp_path / "data")
    assert sorted(p.name for p in (tmp_path / "data").iterdir()) == [
        "artifacts", "events", "locks", "memory", "outer-loops", "runs", "skills-cache"]
    assert (tmp_path / "data" / "events" / "events.db").is_file()


def test_the_local_data_dir_is_private(tmp_path: Path) -> None:
    import os
    import stat

    world = LocalWorld(tmp_path / "data")
    _start(world)
    large = asyncio.run(world.put_artifact(b"z" * 300_000))
    digest = large.removeprefix("artifact://sha256:")
    files = [tmp_path / "data" / "events" / "events.db",
             tmp_path / "data" / "artifacts" / "sha256" / digest[:2] / digest,
             tmp_path / "data" / "locks" / "run_a.lock"]
    with world.lock_run("run_a"):  # its file exists while the lock is held
        for folder in [tmp_path / "data", *(tmp_path / "data").iterdir()]:
            assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700, folder
        for file in files:
            assert stat.S_IMODE(os.stat(file).st_mode) == 0o600, file


def test_a_lock_file_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    world = LocalWorld(tmp_path / "data")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "data" / "locks" / "run_a.lock").symlink_to(victim)
    with pytest.raises(WorldError, match="cannot open the lock file"):
        with world.lock_run("run_a"):
            pass
    assert victim.read_text() == "keep me"


def test_payloads_come_back_exactly_big_integers_and_floats_included(tmp_path: Path) -> None:
    """Payloads are written by orjson where it can; an integer beyond 64 bits (which
    orjson would read back as a float) is written and read by the standard library."""
    world = LocalWorld(tmp_path / "data")
    world.register_version("v", {})
    payloads = [{"big": 2**70, "neg": -(2**65)}, {"u64": 2**64 - 1, "f": 1.5e-7, "e": 1e21},
                {"text": "ünï \u2028 \x7f \x1f"}]
    world.create_run("r", "v", {"in": 2**80}, {}, [NewEvent("RunStarted", payloads[0])])
    world.append("r", [NewEvent("StepCompleted", p, "s") for p in payloads[1:]])
    for reader in (world, LocalWorld(tmp_path / "data")):
        got = [e.payload for e in reader.events("r")]
        assert got == payloads and type(got[0]["big"]) is int
        assert [e.payload for e in reader.events("r", ["RunStarted"])] == payloads[:1]
        assert reader.get_run("r").input == {"in": 2**80}
