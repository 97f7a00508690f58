"""`lwtool verify [RUN_ID]` as a user runs it: an intact store, each kind of damage
(event edited, artifact file rewritten, inline artifact edited, version edited), orphan
temp files and `--clean`, JSON output, and the usage errors."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import ROOT, edit_store, run_cli

EX = ROOT / "examples"
TOOLS = f"{EX / 'tools.py'}:tools"
BIG_TOOLS = """\
def big(args):
    return "y" * 300_000
tools = {"big": big}
"""
BIG = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: big}
permissions: {tools: [big], models: []}
steps:
  - {id: a, uses: tool.call, with: {tool: big}, input: {}}
"""


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data dir with two completed runs: the refine loop and one with a file artifact."""
    data = tmp_path / "data"
    loop = run_cli("run", str(EX / "refine-loop.lwir.yaml"), "--input",
                   str(EX / "inputs" / "refine-loop.json"), "--tools", TOOLS,
                   "--data-dir", str(data), "--run-id", "loop")
    assert loop.returncode == 0, loop.stderr
    (tmp_path / "big.lwir.yaml").write_text(BIG)
    (tmp_path / "bigtools.py").write_text(BIG_TOOLS)
    (tmp_path / "in.json").write_text("{}")
    big = run_cli("run", "big.lwir.yaml", "--input", "in.json", "--tools", "bigtools.py:tools",
                  "--data-dir", str(data), "--run-id", "big", cwd=tmp_path)
    assert big.returncode == 0, big.stderr
    return data


def _verify(data: Path, *args: str):  # type: ignore[no-untyped-def]
    return run_cli("verify", *args, "--data-dir", str(data))


def _file_artifact(data: Path) -> Path:
    files = [p for p in (data / "artifacts" / "sha256").rglob("*") if p.is_file()]
    assert len(files) == 1
    return files[0]


def test_an_intact_store_verifies(data: Path) -> None:
    result = _verify(data)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("verified 2 run(s), ")
    assert result.stdout.rstrip().endswith(": intact")
    one = json.loads(_verify(data, "big", "--json").stdout)
    assert one["ok"] is True and one["runs"] == 1 and one["problems"] == []
    assert one["artifacts"] >= 1 and one["versions"] == 1


def test_an_edited_event_is_damage_naming_the_run_and_event(data: Path) -> None:
    edit_store(data, "UPDATE events SET payload = '{}' WHERE run_id = 'loop' AND seq = 3",
               rechain=None)
    result = _verify(data)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("loop: damaged: the event log is damaged: event 3 (")
    assert "does not match its hash" in lines[0]
    assert lines[-1].endswith(": 1 damaged")
    assert _verify(data, "big").returncode == 0  # the other run is fine on its own
    parsed = json.loads(_verify(data, "--json").stdout)
    assert parsed["ok"] is False
    assert [(p["subject"], p["severity"]) for p in parsed["problems"]] == [("loop", "error")]


def test_a_rewritten_artifact_file_is_damage(data: Path) -> None:
    path = _file_artifact(data)
    path.chmod(0o600)
    path.write_bytes(b'"forged"')
    result = _verify(data)
    assert result.returncode == 1
    assert "big: damaged: event data it depends on is damaged: artifact artifact://sha256:" \
        in result.stdout
    assert "does not match its hash" in result.stdout
    assert _verify(data, "loop").returncode == 0


def test_an_edited_inline_artifact_and_version_are_damage(data: Path) -> None:
    db = sqlite3.connect(data / "events" / "events.db")
    db.execute("UPDATE artifacts SET data = ? WHERE ref = (SELECT min(ref) FROM "
               "artifacts)", (b'"forged"',))
    db.execute("UPDATE versions SET lwir = replace(lwir, 'refine', 'refined')")
    db.commit()
    db.close()
    parsed = json.loads(_verify(data, "--json").stdout)
    assert parsed["ok"] is False
    messages = [p["message"] for p in parsed["problems"] if p["subject"] == "loop"]
    assert len(messages) == 2, parsed["problems"]
    assert "is damaged (its LWIR no longer hashes to its id)" in messages[0]
    assert messages[1].startswith("event data it depends on is damaged: artifact ")
    assert messages[1].endswith("is damaged (its content does not match its hash)")


def test_orphan_temp_files_warn_and_clean_removes_them(data: Path) -> None:
    folder = _file_artifact(data).parent
    orphan = folder / f".{'a' * 64}.999999.0123abcd.tmp"  # pid 999999 is not running
    orphan.write_bytes(b"half written")
    result = _verify(data)
    assert result.returncode == 0  # leftovers are warnings, not damage
    assert f"{orphan}: warning: an orphan temp file" in result.stdout
    cleaned = _verify(data, "--clean")
    assert cleaned.returncode == 0 and f"{orphan}: removed (orphan temp file)" in cleaned.stdout
    assert not orphan.exists()
    assert "warning" not in _verify(data).stdout


def test_a_temp_file_of_a_live_writer_is_left_and_pid_0_is_nobody(data: Path) -> None:
    """A live process (this test's) may still be writing its temp file: never an
    orphan. Pid 0 names no writer (os.kill(0, 0) would answer for verify's own
    process group): an orphan."""
    folder = _file_artifact(data).parent
    live = folder / f".{'b' * 64}.{os.getpid()}.0123abcd.tmp"
    nobody = folder / f".{'c' * 64}.0.0123abcd.tmp"
    live.write_bytes(b"being written")
    nobody.write_bytes(b"half written")
    result = _verify(data, "--clean")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{nobody}: removed (orphan temp file)" in result.stdout
    assert live.exists() and str(live) not in result.stdout
    assert not nobody.exists()


def test_lock_files_nobody_holds_warn_once_and_clean_removes_them(data: Path) -> None:
    """Left by killed runs, and by lwtool before it removed a run's lock file when done:
    one warning for all; --clean takes each and lets go (which removes it), and leaves
    a held one (a run executing now) and a file that is not a lock of lwtool's."""
    from lwtool.world.local import LocalWorld

    locks = data / "locks"
    left = [locks / "run_old1.lock", locks / "run_old2.lock"]
    left[0].write_text("999999999")  # a killed holder's pid
    left[1].write_text("")
    stray = locks / "not a run.lock"
    stray.write_text("")
    result = _verify(data)
    assert result.returncode == 0
    assert f"{locks}: warning: 2 lock file(s) nobody holds" in result.stdout
    with LocalWorld(data).lock_run("run_live"):
        cleaned = _verify(data, "--clean")
        assert cleaned.returncode == 0, cleaned.stderr
        for path in left:
            assert f"{path}: removed (lock file nobody held)" in cleaned.stdout
            assert not path.exists()
        assert (locks / "run_live.lock").exists() and stray.exists()
        assert "lock file" not in _verify(data).stdout


def test_usage_errors(data: Path, tmp_path: Path) -> None:
    unknown = _verify(data, "nope")
    assert unknown.returncode == 2
    assert "nope" in unknown.stderr and "lwtool runs" in unknown.stderr
    empty = run_cli("verify", "--data-dir", str(tmp_path / "none"))
    assert empty.returncode == 2
    assert empty.stderr == f"lwtool: no lwtool data in {tmp_path / 'none'} (pass --data-dir)\n"
