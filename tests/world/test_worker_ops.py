"""What an operator runs workers with (a real PostgreSQL, real worker processes):
`lwtool migrate` and a least-privilege role, queues and their limits across workers,
`lwtool workers`, the metrics and health endpoints, JSON logs, and runs that need model
slots or came from an older lwtool (queued without what they need)."""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli
from tests.fixtures.loopback import http_get
from tests.world.test_workers import EXPECTED, TOOLS, _chain, _marks, _outputs, _worker

pytestmark = pytest.mark.slow


def _enqueue(work: Path, url: str, run_id: str, *more: str) -> None:
    if not (work / "marks.lwir.json").exists():
        _chain(work / "marks.lwir.json")
    (work / f"{run_id}.json").write_text(json.dumps({"run": run_id}))
    done = run_cli("run", str(work / "marks.lwir.json"), "-i", str(work / f"{run_id}.json"),
                   "--enqueue", "--run-id", run_id, "--world", url, *more)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def app_role(postgres_url: str) -> Iterator[str]:
    """A login role that may connect to the test's database and nothing more (no
    CREATE on it): the URL of the same database as that role."""
    import psycopg

    role = f"lwtool_app_{secrets.token_hex(4)}"
    database = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"REVOKE CREATE ON DATABASE {database} FROM PUBLIC")
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    try:
        yield postgres_url.replace("postgresql://postgres@", f"postgresql://{role}@")
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_a_least_privilege_role_works_once_lwtool_migrate_has_run(
        tmp_path: Path, postgres_url: str, app_role: str) -> None:
    import psycopg

    check = run_cli("migrate", "--world", postgres_url, "--check")
    assert check.returncode == 1 and "lwtool schema none (outdated" in check.stderr
    refused = run_cli("runs", "--world", app_role)
    assert refused.returncode == 2
    assert "run `lwtool migrate --world URL` with a role that owns the schema" in \
        refused.stderr, refused.stderr
    as_app = run_cli("migrate", "--world", app_role)
    assert as_app.returncode == 2 and "permission denied" in as_app.stderr
    assert "run `lwtool migrate` as the role that owns the database" in as_app.stderr
    migrated = run_cli("migrate", "--world", postgres_url)
    assert migrated.returncode == 0 and "lwtool schema none -> 7" in migrated.stderr
    again = run_cli("migrate", "--world", postgres_url)
    assert again.returncode == 0 and "(current; this lwtool's is 7)" in again.stderr
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # docs/postgres.md's
        for grant in ("GRANT USAGE ON SCHEMA lwtool TO {r}",
                      "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA lwtool "
                      "TO {r}"):
            conn.execute(grant.format(r=app_role.split("//")[1].split("@")[0]))
    _enqueue(tmp_path, app_role, "r00")
    worker = _worker(tmp_path, app_role)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert _outputs(app_role, 1) == {"r00": EXPECTED}
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE lwtool.meta SET value = '99' WHERE key = 'schema_version'")
    newer = run_cli("runs", "--world", app_role)
    assert newer.returncode == 2 and "newer than this lwtool knows (7)" in newer.stderr
    assert run_cli("migrate", "--world", postgres_url, "--check").returncode == 1


def test_queues_keep_work_apart_and_a_limit_holds_across_workers(
        tmp_path: Path, postgres_url: str) -> None:
    for n in range(3):
        _enqueue(tmp_path, postgres_url, f"g{n}", "--queue", "gpu")
    _enqueue(tmp_path, postgres_url, "d0")
    limited = run_cli("queues", "gpu", "--max-concurrent", "1", "--world", postgres_url)
    assert limited.returncode == 0, limited.stderr
    listed = run_cli("queues", "--world", postgres_url).stdout.splitlines()
    assert [line.split() for line in listed] == [
        ["QUEUE", "QUEUED", "EXECUTING", "WAITING", "LIMIT"], ["default", "1", "0", "0", "-"],
        ["gpu", "3", "0", "0", "1"]]
    on_gpu = run_cli("runs", "--world", postgres_url, "--queue", "gpu").stdout.splitlines()
    assert [line.split()[:2] for line in on_gpu[1:]] == [["g0", "queued"], ["g1", "queued"],
                                                         ["g2", "queued"]], on_gpu
    assert "for a worker on queue gpu with tool mark" in on_gpu[1]
    plain = _worker(tmp_path, postgres_url)  # the default queue only
    _, err = plain.communicate(timeout=120)
    assert plain.returncode == 0 and "claimed run d0" in err and "claimed run g" not in err
    workers = [_worker(tmp_path, postgres_url, "--queue", "gpu", "--concurrency", "2",
                       LWTOOL_TEST_SLEEP="0.05") for _ in range(2)]
    logs = [w.communicate(timeout=180)[1] for w in workers]
    assert all(w.returncode == 0 for w in workers), logs
    assert sum(log.count("claimed run g") for log in logs) == 3
    spans = []  # each run from its first to its last commit: never two at once
    for run_id in ("g0", "g1", "g2"):
        events = [json.loads(line) for line in run_cli(
            "events", run_id, "--json", "--world", postgres_url).stdout.splitlines()]
        spans.append((events[0]["at"], events[-1]["at"]))
    spans.sort()
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(2)), spans
    assert all(out == EXPECTED for out in _outputs(postgres_url, 4).values())
    done = json.loads(run_cli("runs", "--world", postgres_url, "--status", "completed",
                              "--limit", "2", "--json").stdout)  # the last two started
    assert [(r["runId"][0], r["status"], r["queue"]) for r in done] == [
        ("g", "completed", "gpu")] * 2
    bad = run_cli("run", str(tmp_path / "marks.lwir.json"), "-i", str(tmp_path / "g0.json"),
                  "--enqueue", "--queue", "no way", "--world", postgres_url)
    assert bad.returncode == 2 and "--queue takes a queue name" in bad.stderr
    lone = run_cli("run", str(tmp_path / "marks.lwir.json"), "-i", str(tmp_path / "g0.json"),
                   "--queue", "gpu")
    assert lone.returncode == 2 and "--queue names the queue of --enqueue" in lone.stderr
    status = run_cli("runs", "--world", postgres_url, "--status", "done")
    assert status.returncode == 2 and "--status takes one of" in status.stderr
    local = run_cli("runs", "--data-dir", str(tmp_path / "nowhere"), "--queue", "gpu")
    assert local.returncode == 0  # no data dir: nothing to filter


def _metric(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert found, (name, text)
    return float(found.group(1))


def test_a_worker_is_seen_in_workers_metrics_health_and_json_logs(
        tmp_path: Path, postgres_url: str) -> None:
    from tests.fixtures.otlp_receiver import otlp_receiver

    with otlp_receiver() as receiver:
        records = _watched_worker(tmp_path, postgres_url, receiver.url)
        spans = receiver.spans()
    exported = [r for r in records if r["event"] == "otel_exported"]
    assert [r["runId"] for r in exported] == ["m0"] and spans
    assert "invoke_workflow marks" in {span.name for span in spans}  # the run's root


def _hang_up(port: int) -> None:
    import socket
    import struct

    for _ in range(3):
        with socket.create_connection(("127.0.0.1", port)) as scraper:
            scraper.sendall(b"GET /metrics HTTP/1.1\r\nHost: lwtool\r\n\r\n")
            scraper.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _in_hand(url: str, port: int, runs: int) -> None:
    """`lwtool workers` and lwtool_runs_in_hand say `runs` within two seconds (a
    heartbeat comes every five)."""
    deadline = time.monotonic() + 2.0
    while True:
        listed = json.loads(run_cli("workers", "--world", url, "--json").stdout)
        gauge = _metric(http_get(f"http://127.0.0.1:{port}/metrics")[1],
                        "lwtool_runs_in_hand")
        if listed[0]["runs"] == runs and gauge == runs:
            return
        assert time.monotonic() < deadline, (listed, gauge, runs)


def _watched_worker(tmp_path: Path, postgres_url: str, collector: str) -> list[Any]:
    """A worker with metrics, JSON logs and an OTLP endpoint, through one run: what its
    endpoints, `lwtool workers` and its log say; its log records."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "worker", "--world", postgres_url, "--tools", TOOLS,
         "--data-dir", str(tmp_path / "data"), "--metrics-port", "0", "--log-format", "json",
         "--queue", "default", "--queue", "batch", "--otel-endpoint", collector], cwd=ROOT,
        env={**os.environ, "LWTOOL_TEST_DIR": str(tmp_path), "LWTOOL_TEST_SLEEP": "0.2"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = None
        assert worker.stderr is not None
        for line in worker.stderr:
            record = json.loads(line)
            assert {"ts", "level", "worker", "event", "message"} <= set(record), record
            if record["event"] == "metrics_serving":
                port = int(re.search(r":(\d+)/metrics", record["message"]).group(1))
                break
        assert port is not None
        assert http_get(f"http://127.0.0.1:{port}/healthz") == (200, "ok\n")
        _hang_up(port)  # a scraper that hangs up: nothing but JSON lines in the log
        listed = json.loads(run_cli("workers", "--world", postgres_url, "--json").stdout)
        assert [(w["pid"], w["queues"], w["live"]) for w in listed] == [
            (worker.pid, ["batch", "default"], True)]
        serves = [s for s in listed[0]["serves"]  # each tool, by name and pinned to its
                  if not s.startswith("secret ")]  # schemas (and the secrets it offers)
        assert serves[0] == "mark" and re.fullmatch(r"mark@sha256:[0-9a-f]{64}", serves[1])
        assert len(serves) == 2
        _enqueue(tmp_path, postgres_url, "m0")
        # the runs in hand, told at each claim and end, not at the next beat (5 s)
        _in_hand(postgres_url, port, 1)
        deadline = time.monotonic() + 60
        while '"completed"' not in run_cli("runs", "--world", postgres_url, "--json").stdout:
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.1)
        _in_hand(postgres_url, port, 0)
        status, text = http_get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200
        assert _metric(text, "lwtool_runs_claimed_total") == 1
        assert _metric(text, "lwtool_steps_completed_total") == 15
        assert _metric(text, 'lwtool_runs_ended_total{state="done"}') == 1
        assert _metric(text, "lwtool_attempts_in_flight") == 0
        assert _metric(text, "lwtool_claim_latency_seconds_count") == 1
        assert _metric(text, 'lwtool_queue_depth{queue="default",state="queued"}') == 0
        assert _metric(text, "lwtool_heartbeat_age_seconds") < 10
        assert http_get(f"http://127.0.0.1:{port}/nothing")[0] == 404
        table = run_cli("workers", "--world", postgres_url).stdout.splitlines()
        assert table[0].split()[:4] == ["WORKER", "STATE", "QUEUES", "RUNS"]
        assert table[1].split()[1:3] == ["live", "batch,default"]
        worker.send_signal(signal.SIGTERM)
        rest = worker.communicate(timeout=60)[1].splitlines()
        assert worker.returncode == 0, rest
    finally:
        if worker.poll() is None:
            worker.kill()
    records = [json.loads(line) for line in rest]
    claimed = [r for r in records if r["event"] == "run_claimed"]
    assert [(r["runId"], r["level"]) for r in claimed] == [("m0", "info")]
    steps = [(r["event"], r["runId"], r["stepPath"]) for r in records
             if r["event"].startswith("step_")]  # a line per step, by run id and path
    assert len(steps) == 30 and ("step_completed", "m0", "s0") in steps, steps
    assert records[-1]["event"] == "worker_stopped"
    assert run_cli("workers", "--world", postgres_url).stdout.strip() == "no live workers"
    return records


def test_a_killed_worker_leaves_the_list_at_once(tmp_path: Path, postgres_url: str) -> None:
    worker = subprocess.Popen([sys.executable, "-m", "lwtool", "worker", "--world",
                               postgres_url, "--data-dir", str(tmp_path / "data")], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not json.loads(run_cli("workers", "--world", postgres_url, "--json").stdout):
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
    assert json.loads(run_cli("workers", "--world", postgres_url, "--json").stdout) == []
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:  # its last beat's count,
        conn.execute("UPDATE lwtool.workers SET runs = 4, queues = 'not json'")  # and junk
    gone = json.loads(run_cli("workers", "--world", postgres_url, "--json", "--all").stdout)
    assert [(w["pid"], w["live"], w["runs"], w["queues"]) for w in gone] == [
        (worker.pid, False, 0, ["?"])]
    shown = run_cli("workers", "--world", postgres_url, "--all")
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr


def test_a_run_needing_a_model_slot_waits_for_a_worker_that_maps_it(
        tmp_path: Path, postgres_url: str) -> None:
    (tmp_path / "ask.lwir.json").write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "ask"}, "permissions": {"models": ["writer"]},
        "steps": [{"id": "say", "uses": "ai.generate",
                   "with": {"model": "writer", "prompt": "hello"}}]}))
    (tmp_path / "in.json").write_text("{}")
    queued = run_cli("run", str(tmp_path / "ask.lwir.json"), "-i", str(tmp_path / "in.json"),
                     "--enqueue", "--run-id", "a0", "--world", postgres_url)
    assert queued.returncode == 0, queued.stderr
    bare = _worker(tmp_path, postgres_url)
    _, err = bare.communicate(timeout=120)
    assert bare.returncode == 0 and "claimed" not in err, err
    listed = run_cli("runs", "--world", postgres_url).stdout
    assert listed.splitlines()[1].split() == ["a0", "queued", "for", "a", "worker", "with",
                                              "model", "slot", "writer"], listed
    (tmp_path / "models.yaml").write_text("writer: offline\n")
    mapped = _worker(tmp_path, postgres_url, "--models", str(tmp_path / "models.yaml"))
    _, err = mapped.communicate(timeout=120)
    assert mapped.returncode == 0 and "run a0 completed" in err, err


def test_a_run_queued_without_its_needs_is_handed_back_once_and_marked(
        tmp_path: Path, postgres_url: str) -> None:
    """A run an older lwtool queued (no `needs`) is claimed by a worker without its
    tools, handed back with what it needs written on it: that worker then drains and
    ends (it spun on it before), and a worker with the tools finishes it."""
    import psycopg

    _enqueue(tmp_path, postgres_url, "o0")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE lwtool.queue SET needs = NULL")
    bare = subprocess.run([sys.executable, "-m", "lwtool", "worker", "--world", postgres_url,
                           "--data-dir", str(tmp_path / "data"), "--drain", "-v"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert bare.returncode == 0, bare.stderr
    assert bare.stderr.count("claimed run o0") == 1, bare.stderr
    assert "run o0 handed back: this worker cannot serve it" in bare.stderr
    rows = json.loads(run_cli("runs", "--world", postgres_url, "--json").stdout)
    assert [(r["runId"], r["status"], r.get("needs")) for r in rows] == [
        ("o0", "queued", ["mark"])]
    worker = _worker(tmp_path, postgres_url)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert _outputs(postgres_url, 1) == {"o0": EXPECTED}
    assert set(_marks(tmp_path).values()) == {1}


def test_a_run_a_worker_failed_is_retried_by_the_workers(tmp_path: Path,
                                                         postgres_url: str) -> None:
    """The worker's log says how to retry; `lwtool retry RUN --enqueue` reopens the run
    and queues it again (no tools needed there); a worker runs its failed step again
    and nothing before it. `replay --enqueue` refuses a run that has ended."""
    step = {"tool": "mark", "args": {"run": "f", "step": "s1", "value": "x", "failOnce": True}}
    (tmp_path / "wf.lwir.json").write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "once"}, "permissions": {"tools": ["mark"]},
        "steps": [{"id": "s0", "uses": "tool.call", "with": {
                       "tool": "mark", "args": {"run": "f", "step": "s0", "value": "v"}}},
                  {"id": "s1", "uses": "tool.call", "needs": ["s0"], "with": step}]}))
    (tmp_path / "in.json").write_text("{}")
    world = ("--world", postgres_url)
    assert run_cli("run", str(tmp_path / "wf.lwir.json"), "-i", str(tmp_path / "in.json"),
                   "--enqueue", "--run-id", "f", *world).returncode == 0
    first = _worker(tmp_path, postgres_url)
    _, err = first.communicate(timeout=120)
    assert "run f failed (step_failed)" in err and \
        "retry it: lwtool retry f --enqueue" in err, err
    # -v: a line per step attempt, with the step's path
    assert "worker " in err and "step s0 (tool.call) attempt 1 started" in err, err
    assert "step s0 completed" in err and "step s1 attempt 1 failed: " in err, err
    ended = run_cli("replay", "f", "--enqueue", *world)
    assert ended.returncode == 2 and "`lwtool retry f --enqueue`" in ended.stderr
    retried = run_cli("retry", "f", "--enqueue", *world)
    assert retried.returncode == 0, retried.stderr
    assert "run f reopened and queued again" in retried.stderr
    again = run_cli("retry", "f", "--enqueue", *world)  # reopened: not failed any more
    assert again.returncode == 2 and "has not failed" in again.stderr
    second = _worker(tmp_path, postgres_url)
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0 and "run f completed" in err, err
    assert _marks(tmp_path) == {"f:s0": 1, "f:s1": 2}
    local = run_cli("retry", "f", "--enqueue", "--data-dir", str(tmp_path / "d"))
    assert local.returncode == 2 and "--enqueue needs a PostgreSQL world" in local.stderr


def test_a_collector_that_is_away_is_a_warning_not_a_lost_run(tmp_path: Path,
                                                               postgres_url: str) -> None:
    _enqueue(tmp_path, postgres_url, "x0")
    worker = _worker(tmp_path, postgres_url, "--otel-endpoint", "http://127.0.0.1:9")
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0 and "run x0 completed" in err, err
    assert "run x0: cannot export its trace:" in err
    assert _outputs(postgres_url, 1) == {"x0": EXPECTED}


def test_a_run_killed_outside_the_queue_is_resumed_by_a_worker(tmp_path: Path,
                                                               postgres_url: str) -> None:
    """A run `lwtool run` started in the world and was killed in: `replay --enqueue`
    queues it for the first time, so its first claim expects no run, finds one, and
    resumes it from its log (its committed step is not run again)."""
    step = {"tool": "mark", "args": {"run": "k", "step": "s0", "value": "v"}}
    (tmp_path / "wf.lwir.json").write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "killed"}, "permissions": {"tools": ["mark"]},
        "steps": [{"id": "s0", "uses": "tool.call", "with": step},
                  {"id": "s1", "uses": "tool.call", "needs": ["s0"], "with": {
                      **step, "args": {**step["args"], "step": "s1"}}}]}))
    (tmp_path / "in.json").write_text("{}")
    world = ("--world", postgres_url)
    killed = run_cli("run", str(tmp_path / "wf.lwir.json"), "-i", str(tmp_path / "in.json"),
                     "--run-id", "k", "--tools", TOOLS, *world,
                     env={"LWTOOL_TEST_DIR": str(tmp_path),
                          "LWTOOL_FAULT_KILL_AFTER": "StepCompleted@s0"})
    assert killed.returncode != 0 and _marks(tmp_path) == {"k:s0": 1}
    queued = run_cli("replay", "k", "--enqueue", *world)
    assert queued.returncode == 0, queued.stderr
    worker = _worker(tmp_path, postgres_url)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0 and "claimed run k (claim 1)" in err, err
    assert "run k completed" in err and "left for later" not in err, err
    assert "(claim 2)" not in err, err  # resumed at its first claim, not after a look
    assert _marks(tmp_path) == {"k:s0": 1, "k:s1": 1}
    assert run_cli("verify", "k", *world).returncode == 0


def test_a_worker_killed_right_after_a_runs_last_commit_leaves_it_ended(
        tmp_path: Path, postgres_url: str) -> None:
    """The claim ends in the commit that completes the run: a worker SIGKILLed the
    moment RunCompleted commits leaves the run completed and its queue row done, for
    no other worker to claim, look at or end."""
    import psycopg

    _enqueue(tmp_path, postgres_url, "x0")
    worker = _worker(tmp_path, postgres_url, LWTOOL_FAULT_KILL_AFTER="RunCompleted@")
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == -signal.SIGKILL, err
    with psycopg.connect(postgres_url) as conn:
        row = conn.execute("SELECT state, lease_until FROM lwtool.queue WHERE run_id = "
                           "'x0'").fetchone()
    assert row == ("done", None)
    assert _outputs(postgres_url, 1) == {"x0": EXPECTED}
    assert run_cli("runs", "--world", postgres_url).stdout.splitlines()[1].split()[:2] == \
        ["x0", "completed"]


def test_a_stopping_worker_waits_for_its_runs_without_spinning(tmp_path: Path,
                                                               postgres_url: str) -> None:
    """SIGTERM with a run in hand: the worker lets the run finish, and meanwhile its
    claim loop sleeps until something ends (it spun at 100% of a core before)."""
    (tmp_path / "slow.py").write_text("import time\n\ndef slow(args):\n    time.sleep(3)\n"
                                      "    return {'ok': True}\n\ntools = {'slow': slow}\n")
    (tmp_path / "slow.lwir.json").write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "slow"}, "permissions": {"tools": ["slow"]},
        "steps": [{"id": "s", "uses": "tool.call", "with": {"tool": "slow"}}]}))
    (tmp_path / "in.json").write_text("{}")
    assert run_cli("run", str(tmp_path / "slow.lwir.json"), "-i", str(tmp_path / "in.json"),
                   "--enqueue", "--run-id", "slow", "--world", postgres_url).returncode == 0
    worker = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "worker", "--world", postgres_url, "--tools",
         f"{tmp_path / 'slow.py'}:tools", "--data-dir", str(tmp_path / "data"), "-v"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert worker.stderr is not None
        while "claimed run slow" not in worker.stderr.readline():
            assert worker.poll() is None
        worker.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        ticks = os.sysconf("SC_CLK_TCK")

        def cpu() -> float:
            fields = Path(f"/proc/{worker.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks

        before = cpu()
        time.sleep(1.0)
        spent = cpu() - before
        assert spent < 0.2, f"{spent:.2f} s of CPU in 1 s of waiting for its run"
        worker.communicate(timeout=60)
        assert worker.returncode == 0
    finally:
        if worker.poll() is None:
            worker.kill()
    status = json.loads(run_cli("runs", "--world", postgres_url, "--json").stdout)
    assert [(r["runId"], r["status"]) for r in status] == [("slow", "completed")]
