"""A store that is fine but cannot be used now (a full disk, a read-only mount, another
user's data dir) is reported as exactly that, never as damaged and never as a
traceback; once the cause is gone the run resumes. Real conditions, not mocks: a small
tmpfs, a read-only bind mount and an unmapped owner, in private mount and user
namespaces (`unshare`), so nothing outside the test changes."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

WORKFLOW = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: big}
input: {schema: {type: object}}
permissions: {tools: [big], models: []}
steps:
  - {id: a, uses: tool.call, with: {tool: big}, input: {}}
  - {id: b, uses: tool.call, needs: [a], with: {tool: big}, input: {}}
"""
TOOLS = """\
import os
def big(args):
    return "x" * int(os.environ.get("BIG_BYTES", "3000000"))
tools = {"big": big}
"""


def _works(*command: str) -> bool:
    try:
        return subprocess.run([*command, "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


MOUNTS = _works("unshare", "--mount")
USERS = _works("unshare", "--user", "--map-user=1000", "--map-group=1000")
LWTOOL = f"{shlex.quote(sys.executable)} -m lwtool"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "big.lwir.yaml").write_text(WORKFLOW)
    (tmp_path / "bigtools.py").write_text(TOOLS)
    (tmp_path / "in.json").write_text("{}")
    return tmp_path


def _sh(folder: Path, script: str, *prefix: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([*prefix, "sh", "-c", script], cwd=folder, capture_output=True,
                          text=True, timeout=180, env=env)


RUN = f"{LWTOOL} run big.lwir.yaml --input in.json --tools bigtools.py:tools --data-dir D"


@pytest.mark.skipif(not MOUNTS, reason="needs unshare --mount (root)")
def test_a_full_disk_is_reported_and_the_run_resumes_once_there_is_room(folder: Path) -> None:
    (folder / "D").mkdir()
    result = _sh(folder, f"""
        mount -t tmpfs -o size=2m tmpfs D || exit 99
        {RUN} --run-id r1 > out1; echo "rc1=$?"
        find D -name '*.tmp' | sed 's/^/temp: /'
        mount -o remount,size=20m D
        {LWTOOL} replay r1 --tools bigtools.py:tools --data-dir D > out2; echo "rc2=$?"
        {LWTOOL} verify --data-dir D; echo "rc3=$?"
        wc -c < out2
    """, "unshare", "--mount")
    out, err = result.stdout, result.stderr
    assert "rc1=2" in out, (out, err)
    assert ("lwtool: run r1: cannot store an artifact of 3,000,002 bytes in D: no space left "
            "on the device") in err
    assert "temp:" not in out and "damaged" not in err and "Traceback" not in err
    assert "rc2=0" in out and "rc3=0" in out and "intact" in out
    assert out.strip().endswith("3000003")  # the output: a JSON string of 3,000,000 x


@pytest.mark.skipif(not MOUNTS, reason="needs unshare --mount (root)")
@pytest.mark.parametrize("clean_close", [True, False])
def test_a_read_only_data_dir_can_be_read_and_refuses_writes(folder: Path,
                                                             clean_close: bool) -> None:
    """Inspecting runs on a read-only mount works, whether the last writer closed the
    store cleanly (no -wal/-shm left) or left its commits in the -wal file (a process
    that ended without closing: here a second reader, killed afterwards, keeps the last
    writer from checkpointing); running or resuming says exactly why it cannot."""
    import sqlite3

    env = {**os.environ, "BIG_BYTES": "10"}
    subprocess.run(shlex.split(RUN) + ["--run-id", "r0"], cwd=folder, env=env, check=True,
                   capture_output=True, timeout=120)
    db = folder / "D" / "events" / "events.db"
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time\n"
                               "db = sqlite3.connect(sys.argv[1])\n"
                               "db.execute('SELECT count(*) FROM runs').fetchall()\n"
                               "print('open', flush=True)\ntime.sleep(600)", str(db)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "open\n"
    subprocess.run(shlex.split(RUN) + ["--run-id", "r1"], cwd=folder, env=env, check=True,
                   capture_output=True, timeout=120)
    holder.kill()
    holder.wait()
    wal = db.with_name("events.db-wal")
    if clean_close:  # checkpoint: no -wal/-shm left, as after a clean close
        sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)").connection.close()
        wal.unlink(missing_ok=True)
        wal.with_name("events.db-shm").unlink(missing_ok=True)
    else:
        assert wal.stat().st_size > 0  # run r1's commits are in the -wal file only
    # a replay of a run that ended reads its result from its log: no lock, no write
    reads = ["events r1", "report r1", "runs", "verify", "replay r1 --tools bigtools.py:tools"]
    writes = ["run big.lwir.yaml --input in.json --tools bigtools.py:tools --run-id r2"]
    script = "mount --bind D D && mount -o remount,ro,bind D D || exit 99\n" + "\n".join(
        f'{LWTOOL} {command} --data-dir D >/dev/null; echo "rc=$?"'
        for command in reads + writes)
    result = _sh(folder, script, "unshare", "--mount")
    assert result.stdout.split() == ["rc=0"] * len(reads) + ["rc=2"] * len(writes), \
        result.stderr
    lines = [line for line in result.stderr.splitlines()
             if line != "lwtool: run r1 completed"]  # the replay's status line
    assert len(lines) == len(writes)
    assert all(line.endswith("D is on a read-only file system") for line in lines), lines
    assert "damaged" not in result.stderr


@pytest.mark.skipif(not USERS, reason="needs unshare --user")
def test_another_users_data_dir_is_reported_as_theirs(folder: Path) -> None:
    env = {**os.environ, "BIG_BYTES": "10"}
    subprocess.run(shlex.split(RUN) + ["--run-id", "r1"], cwd=folder, env=env, check=True,
                   capture_output=True, timeout=120)
    subprocess.run(["chown", "-R", "65534:65534", str(folder / "D")], check=True)
    commands = ["events r1", "runs", "verify", "replay r1", "run big.lwir.yaml --input "
                "in.json --tools bigtools.py:tools"]
    script = "\n".join(f'{LWTOOL} {command} --data-dir D >/dev/null; echo "rc=$?"'
                       for command in commands)
    result = _sh(folder, script, "unshare", "--user", "--map-user=1000", "--map-group=1000")
    assert result.stdout.split() == ["rc=2"] * len(commands), result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == len(commands)
    assert all("D belongs to another user (uid 65534)" in line for line in lines), lines


def test_lock_onto_a_folder_is_refused_with_a_sentence(folder: Path) -> None:
    (folder / "big.lwir.lock.json").mkdir()
    result = _sh(folder, f"{LWTOOL} lock big.lwir.yaml")
    assert result.returncode == 2
    assert result.stderr == ("lwtool: cannot write the lock big.lwir.lock.json: a folder has "
                             "that name\n")


@pytest.mark.skipif(not MOUNTS, reason="needs unshare --mount (root)")
def test_lock_in_a_read_only_folder_is_refused_and_leaves_nothing(folder: Path) -> None:
    result = _sh(folder, f"mount --bind . . && mount -o remount,ro,bind . . || exit 99\n"
                 f"cd . && {LWTOOL} lock big.lwir.yaml", "unshare", "--mount")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("lwtool: cannot write the lock big.lwir.lock.json: "
                                    "Read-only file system")
    assert sorted(p.name for p in folder.iterdir()) == ["big.lwir.yaml", "bigtools.py",
                                                        "in.json"]
