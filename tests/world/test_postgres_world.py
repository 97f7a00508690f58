"""The PostgreSQL world on a real server: a run through the CLI reads back like a local
one (events, report, runs, verify, graph, export-otel, the inspector); a second process
cannot take a run that is executing; an edited event is damage; a database a newer
lwtool migrated is refused; an unreachable server is one line naming it, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lwtool.world.base import RunLocked, StoreDamaged, StoreUnavailable
from lwtool.world.postgres import PostgresWorld
from tests.conftest import ROOT, run_cli

EXAMPLE = ["examples/refine-loop.lwir.yaml", "--input", "examples/inputs/refine-loop.json",
           "--tools", "examples/tools.py:tools"]


def test_a_run_in_postgres_reads_back_like_a_local_one(postgres_url: str,
                                                       tmp_path: Path) -> None:
    env = {"LWTOOL_WORLD": postgres_url}
    local = run_cli("run", *EXAMPLE, "--data-dir", str(tmp_path / "data"), "--run-id", "r1",
                    "--json")
    ran = run_cli("run", *EXAMPLE, "--data-dir", str(tmp_path / "pg"), "--run-id", "r1",
                  "--json", env=env)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["output"] == json.loads(local.stdout)["output"]
    assert not (tmp_path / "pg" / "events").exists()  # the runs live in the database
    events = run_cli("events", "r1", "--json", env=env).stdout.splitlines()
    local_events = run_cli("events", "r1", "--json", "--data-dir",
                           str(tmp_path / "data")).stdout.splitlines()
    assert [json.loads(e)["type"] for e in events] == \
        [json.loads(e)["type"] for e in local_events]
    assert run_cli("runs", env=env).stdout.splitlines()[1].split()[:3] == \
        ["r1", "completed", "refine-loop"]
    assert "intact" in run_cli("verify", env=env).stdout
    assert run_cli("replay", "r1", "--json", "--tools", "examples/tools.py:tools",
                   env=env).returncode == 0
    otel = run_cli("export-otel", "r1", "--file", str(tmp_path / "spans.json"), env=env)
    assert otel.returncode == 0, otel.stderr
    assert "done ×3" in run_cli("graph", "examples/refine-loop.lwir.yaml", "--run", "r1",
                                env=env).stdout


def test_the_inspector_reads_a_postgres_run(postgres_url: str, tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from lwtool.ui.app import create_app

    assert run_cli("run", *EXAMPLE, "--run-id", "r1", env={
        "LWTOOL_WORLD": postgres_url}).returncode == 0
    world = PostgresWorld(postgres_url, tmp_path)
    with TestClient(create_app(world), base_url="http://127.0.0.1") as client:
        assert "r1" in client.get("/").text
        page = client.get("/runs/r1").text
    assert "completed" in page and "improve" in page
    world.close()


def test_a_second_process_cannot_take_an_executing_run(postgres_url: str,
                                                       tmp_path: Path) -> None:
    world = PostgresWorld(postgres_url, tmp_path)
    assert not world.executing("busy")
    with world.lock_run("busy"):
        assert world.executing("busy") and not world.executing("idle")
        probe = subprocess.run([sys.executable, "-c", (
            "from lwtool.world.postgres import PostgresWorld\n"
            "from lwtool.world.base import RunLocked\n"
            f"w = PostgresWorld({postgres_url!r}, {str(tmp_path)!r})\n"
            "try:\n    w.lock_run('busy').__enter__()\n"
            "except RunLocked as e:\n    print('locked:', e)\n")],
            cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert "locked: run busy is being executed by another process" in probe.stdout
        with pytest.raises(RunLocked):
            world.lock_run("busy").__enter__()
    assert not world.executing("busy")
    with world.lock_run("busy"):  # released: taken again
        pass
    world.close()


def test_an_edited_event_is_damage(postgres_url: str, tmp_path: Path) -> None:
    import psycopg

    assert run_cli("run", *EXAMPLE, "--run-id", "r1", env={
        "LWTOOL_WORLD": postgres_url}).returncode == 0
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE lwtool.events SET payload = replace(payload, 'improve', "
                     "'lmprove') WHERE run_id = 'r1' AND seq = 2")
    world = PostgresWorld(postgres_url, tmp_path)
    with pytest.raises(StoreDamaged, match="event 2 .* does not match its hash"):
        world.events("r1")
    replay = run_cli("replay", "r1", "--tools", "examples/tools.py:tools", "--world",
                     postgres_url)
    assert replay.returncode == 2 and "the event log is damaged" in replay.stderr
    world.close()


def test_a_database_a_newer_lwtool_migrated_is_refused(postgres_url: str,
                                                        tmp_path: Path) -> None:
    import psycopg

    PostgresWorld(postgres_url, tmp_path).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE lwtool.meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreUnavailable, match="schema 99, newer than this lwtool knows"):
        PostgresWorld(postgres_url, tmp_path)


def test_an_unreachable_server_is_one_line_naming_it(tmp_path: Path) -> None:
    done = run_cli("run", *EXAMPLE, "--data-dir", str(tmp_path / "data"), "--world",
                   "postgresql://nobody@127.0.0.1:1/none")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "lwtool: cannot reach PostgreSQL at 127.0.0.1:1/none: ")
    assert "Connection refused" in lines[0] and not (tmp_path / "data").exists()


@pytest.mark.parametrize(("url", "said"), [
    ("postgresql://u:pa%zzss@127.0.0.1:1/db", "the PostgreSQL URL for 127.0.0.1:1/db is not "
     'valid: invalid percent-encoded token: "***" (a `%` in a URL starts an escape: write '
     "`%25` for `%` itself)"),
    ("postgresql://u@127.0.0.1:1/db?password=pa%zzss", "the PostgreSQL URL for "
     '127.0.0.1:1/db is not valid: invalid percent-encoded token: "***" (a `%` in a URL '
     "starts an escape: write `%25` for `%` itself)"),
    ("postgresql://u:pass@[::1/db", "the PostgreSQL URL is not valid: Invalid IPv6 URL"),
    ("postgresql://u:pass@127.0.0.1:99999/db", "the PostgreSQL URL is not valid: Port out "
     "of range 0-65535"),
])
def test_a_bad_url_is_one_line_without_its_password(tmp_path: Path, url: str,
                                                     said: str) -> None:
    done = run_cli("runs", "--data-dir", str(tmp_path / "data"), "--world", url)
    assert done.returncode == 2
    assert done.stderr == f"lwtool: {said}\n"
    assert "pa%zzss" not in done.stderr and "pass" not in done.stderr


def test_lwtool_ui_serves_a_postgres_world(postgres_url: str, tmp_path: Path) -> None:
    import signal
    import urllib.request

    from tests.ui.test_ui_browser import start_inspector

    assert run_cli("run", *EXAMPLE, "--run-id", "r1", "--world", postgres_url).returncode == 0
    proc, url = start_inspector(tmp_path / "nothing-here", "--world", postgres_url)
    try:
        with urllib.request.urlopen(url + "runs/r1", timeout=30) as reply:
            page = reply.read().decode()
        assert reply.status == 200 and "completed" in page and "improve" in page
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_a_step_path_completes_once(postgres_url: str, tmp_path: Path) -> None:
    """The log refuses a second StepCompleted for a step path (a slow worker whose lease
    ran out, after its successor committed): the whole commit, nothing written."""
    from lwtool.world.base import NewEvent, StepCommittedElsewhere

    world = PostgresWorld(postgres_url, tmp_path)
    world.register_version("v", {"steps": []})
    world.create_run("r", "v", {}, {}, [NewEvent("RunStarted", {})])
    done = NewEvent("StepCompleted", {"stepId": "a"}, "fan[1].a")
    world.append("r", [NewEvent("StepAttemptStarted", {}, "fan[1].a"), done])
    head = world.run_head("r")
    with pytest.raises(StepCommittedElsewhere, match="fan\\[1\\].a completed already"):
        world.append("r", [NewEvent("harness.session.completed", {}, "fan[1].a"), done])
    assert world.run_head("r") == head and len(world.events("r")) == 3
    world.append("r", [NewEvent("StepCompleted", {"stepId": "a"}, "fan[2].a")])  # another path
    world.close()


def test_a_run_whose_lock_connection_was_closed_commits_nothing_more(
        postgres_url: str, tmp_path: Path) -> None:
    """The server ended the session holding a run's advisory lock (as a restart does):
    another process may have taken the run since, so this one's next commit is refused,
    even one that waited for the server; a lock taken again commits as before."""
    import os

    import psycopg

    from lwtool.world.base import NewEvent, RunLockLost

    world = PostgresWorld(postgres_url, tmp_path)
    world.register_version("v", {"steps": []})
    lock_session = ("SELECT pid FROM pg_stat_activity WHERE application_name = "
                    f"'lwtool run lock pid {os.getpid()}' AND datname = current_database()")
    with world.lock_run("r"):
        world.create_run("r", "v", {}, {}, [NewEvent("RunStarted", {})])
        world.append("r", [NewEvent("StepCompleted", {}, "a")])
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("LISTEN ping")
            world._held["r"].execute("LISTEN ping")
            admin.execute("NOTIFY ping")  # something arrives that is not the session's end
            world.append("r", [NewEvent("StepCompleted", {}, "b")])
            (pid,), = admin.execute(lock_session).fetchall()
            admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))
        with pytest.raises(RunLockLost, match="run r lost its lock: PostgreSQL at .* closed"):
            world.append("r", [NewEvent("StepCompleted", {}, "c")])
        with pytest.raises(RunLockLost):  # the run stays refused while it is executing
            world.append("r", [NewEvent("StepCompleted", {}, "c")])
    assert [e.step_path for e in world.events("r")] == [None, "a", "b"]
    with world.lock_run("r"):  # taken again (a resume): commits go on
        world.append("r", [NewEvent("StepCompleted", {}, "c")])
    world.append("r", [NewEvent("RunCompleted", {})])  # appended unlocked, as a branch is
    assert [e.step_path for e in world.events("r")] == [None, "a", "b", "c", None]
    world.close()


def test_artifacts_of_any_size_round_trip_with_their_events(postgres_url: str,
                                                            tmp_path: Path) -> None:
    """An artifact is stored in 1 MiB chunks with the events of its commit: empty, one
    chunk, several; stored twice, once."""
    import asyncio
    import hashlib
    import os

    import psycopg

    from lwtool.world.base import NewEvent
    from lwtool.world.postgres import CHUNK

    world = PostgresWorld(postgres_url, tmp_path)
    world.register_version("v", {"steps": []})
    world.create_run("r", "v", {}, {}, [NewEvent("RunStarted", {})])
    blobs = [b"", b"small", os.urandom(CHUNK), os.urandom(2 * CHUNK + 17)]
    refs = [f"artifact://sha256:{hashlib.sha256(b).hexdigest()}" for b in blobs]
    world.append("r", [NewEvent("StepCompleted", {"refs": refs}, "a")], None,
                 list(zip(refs, blobs, strict=True)))
    world.append("r", [NewEvent("StepCompleted", {"refs": refs}, "b")], None,
                 list(zip(refs, blobs, strict=True)))  # there already: nothing added
    assert asyncio.run(world.put_artifact(blobs[3])) == refs[3]
    for ref, blob in zip(refs, blobs, strict=True):
        assert asyncio.run(world.get_artifact(ref)) == blob
    with psycopg.connect(postgres_url) as conn:
        chunks = dict(conn.execute("SELECT ref, count(*) FROM lwtool.artifact_chunks "
                                   "GROUP BY ref").fetchall())
    assert [chunks[ref] for ref in refs] == [1, 1, 1, 3]
    assert [e.step_path for e in world.events("r")] == [None, "a", "b"]
    world.close()


def test_model_replies_are_read_back_as_payloads(postgres_url: str, tmp_path: Path) -> None:
    """What the inspector's run list sums: each harness.model.responded payload of the
    runs asked for, decoded once, in commit order (an integer beyond 64 bits exact)."""
    from lwtool.canonical.digest import workflow_version_id
    from lwtool.world.base import NewEvent

    big = 2**70 + 1
    version = workflow_version_id({"kind": "Workflow"})
    world = PostgresWorld(postgres_url, tmp_path)
    world.register_version(version, {"kind": "Workflow"})
    world.create_run("run_replies", version, {}, {}, [NewEvent("RunStarted", {})])
    world.append("run_replies", [
        NewEvent("harness.model.responded", {"usage": {"inputTokens": 3}, "big": big}, "a"),
        NewEvent("StepCompleted", {}, "a"),
        NewEvent("harness.model.responded", {"usage": {"inputTokens": 4}}, "b")])
    replies = world.model_replies(["run_replies", "run_none"])
    assert replies == {"run_replies": [{"usage": {"inputTokens": 3}, "big": big},
                                       {"usage": {"inputTokens": 4}}]}
    assert world.model_replies([]) == {}
    world.close()


def test_a_printed_world_url_hides_its_password() -> None:
    from lwtool.world.postgres_url import without_password

    assert without_password("postgresql://u:s%25cret@h:5432/db?sslmode=require") == \
        "postgresql://u:***@h:5432/db?sslmode=require"
    assert without_password("postgresql://u@h/db?password=pw&sslmode=require") == \
        "postgresql://u@h/db?password=***&sslmode=require"
    assert without_password("postgresql://u@h/db") == "postgresql://u@h/db"


def test_a_commits_rows_keep_every_character_in_one_statement_text(
        postgres_url: str, tmp_path: Path) -> None:
    """An append's events and artifacts go as JSON (postgres_trips): payloads with
    quotes, backslashes, escapes, line separators and non-ASCII text read back exactly
    and verify against the hash chain; an artifact twice in one commit is stored once;
    the statement's text is the same for any number of events and artifacts."""
    import asyncio
    import hashlib

    from lwtool.canonical.digest import workflow_version_id
    from lwtool.world import postgres_trips as trips
    from lwtool.world.base import NewEvent
    from lwtool.world.verify import verify

    world = PostgresWorld(postgres_url, tmp_path)
    lwir = {"steps": []}
    world.register_version(workflow_version_id(lwir), lwir)
    odd = {"text": 'q"uote \\ back\\slash \u2028 \u00fc \U0001f600 \\u0000 \x00 \t\n',
           "path": "fan[0].a"}
    world.create_run("r", workflow_version_id(lwir), {}, {}, [NewEvent("RunStarted", odd)])
    data = b'{"ok":true}'
    ref = f"artifact://sha256:{hashlib.sha256(data).hexdigest()}"
    world.append("r", [NewEvent("StepStarted", odd, 'fan[0]."a"'),
                       NewEvent("StepCompleted", {"ref": ref}, 'fan[0]."a"')], None,
                 [(ref, data), (ref, data)])
    assert [e.payload for e in world.events("r")][:2] == [odd, odd]
    assert asyncio.run(world.get_artifact(ref)) == data
    assert not verify(world, "r").problems
    world.close()
    texts = {trips.append_at("r", (1, "h"), [("r", 2, "T", None, "{}", 0.0, "h")] * n,
                             (1 + n, "h"), None, 0.0, None, [(ref, data)] * n)[0]
             for n in (1, 3, 40)}
    assert len(texts) == 1


def test_an_append_that_misses_tries_the_head_its_statement_found(
        postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes appending to one run (an owner and a helper): the one whose known
    head another moved misses, and its statement answers with the head it found: the
    next try lands there without a read of its own, and the chain stays whole. A miss on
    the run's status still says so (RunStatusChanged)."""
    from lwtool.canonical.digest import workflow_version_id
    from lwtool.world.base import NewEvent, RunStatusChanged
    from lwtool.world.verify import verify

    owner, helper = PostgresWorld(postgres_url, tmp_path), PostgresWorld(postgres_url,
                                                                         tmp_path)
    try:
        version = workflow_version_id({"steps": []})
        owner.register_version(version, {"steps": []})
        owner.create_run("r", version, {}, {}, [NewEvent("RunStarted", {})])
        helper.append("r", [NewEvent("StepCompleted", {}, "a")])  # the helper knows a head
        owner.append("r", [NewEvent("StepCompleted", {}, "b")])  # and the owner moves it
        reads: list[str] = []
        real = helper._head
        monkeypatch.setattr(helper, "_head", lambda run, when: reads.append(run) or
                            real(run, when))
        helper.append("r", [NewEvent("StepCompleted", {}, "c")])
        assert reads == []  # the miss told it where the head was
        assert [e.step_path for e in owner.events("r")] == [None, "a", "b", "c"]
        assert not verify(owner, "r").problems
        owner.append("r", [NewEvent("StepCompleted", {}, "d")])
        with pytest.raises(RunStatusChanged):
            helper.append("r", [NewEvent("RunCompleted", {})], status="completed",
                          when_status="waiting")
        assert [e.step_path for e in owner.events("r")][-1] == "d"
    finally:
        owner.close()
        helper.close()
