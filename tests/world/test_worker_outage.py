"""A PostgreSQL server lost mid-run: the worker neither dies nor loses anything; it
waits, looking again less and less often, and once the server is back the run resumes
from its log and completes with an uninterrupted run's output (a private cluster,
stopped with `pg_ctl -m immediate` and started again). A commit that waited for the
server until it was back is refused too: the restart ended the run's lock."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lwtool.observe.worker_metrics import DEPTH_WAIT
from lwtool.world.postgres import POOL_WAIT
from lwtool.world.postgres_url import where
from tests.fixtures.loopback import http_get
from tests.fixtures.postgres import PrivateCluster, database
from tests.world.test_worker_ops import _metric
from tests.world.test_workers import EXPECTED, STEPS, _enqueue, _marks, _outputs, _worker

pytestmark = pytest.mark.slow


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture()
def cluster() -> Iterator[PrivateCluster]:
    server = PrivateCluster()
    try:
        server.start()
        yield server
    finally:
        server.remove()


def test_a_run_resumes_once_the_server_is_back(tmp_path: Path,
                                               cluster: PrivateCluster) -> None:
    port = _free_port()
    health = f"http://127.0.0.1:{port}/healthz"
    with database(cluster.url) as url:
        _enqueue(tmp_path, url, 1)
        worker = _worker(tmp_path, url, "--lease-seconds", "2", "--metrics-port", str(port),
                         LWTOOL_TEST_SLEEP="0.2")
        deadline = time.monotonic() + 60
        while not (tmp_path / "marks.log").exists() or len(_marks(tmp_path)) < 4:
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        assert http_get(health)[0] == 200
        metrics = f"http://127.0.0.1:{port}/metrics"
        before = http_get(metrics)[1]
        assert _metric(before, "lwtool_world_up") == 1
        assert _metric(before, 'lwtool_queue_depth{queue="default",state="claimed"}') == 1
        cluster.stop()  # mid-run: a step is executing, its result not yet committed
        time.sleep(POOL_WAIT + 3)  # longer than a commit waits for a connection
        assert worker.poll() is None  # still there, waiting for the server
        down, why = http_get(health)  # the heartbeat cannot reach the world
        assert down == 503 and why.startswith("no heartbeat reached the world for"), why
        asked = time.monotonic()  # a scrape gets the last figures at once, flagged
        status, away = http_get(metrics)
        assert status == 200 and time.monotonic() - asked < DEPTH_WAIT + 1.5
        assert _metric(away, "lwtool_world_up") == 0
        assert _metric(away, 'lwtool_queue_depth{queue="default",state="claimed"}') == 1
        cluster.start()
        deadline = time.monotonic() + 60
        while http_get(health)[0] != 200:  # healthy again once a beat gets through
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.2)
        while _metric(http_get(metrics)[1], "lwtool_world_up") != 1:  # reads answer again
            assert time.monotonic() < deadline and worker.poll() is None
            time.sleep(0.2)
        _, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err
        # its commit failed while the server was away, or found its lock lost after
        assert re.search(r"run r00 left for later: (PostgreSQL|run r00 lost its lock: "
                         r"PostgreSQL) at", err), err
        assert "discarding" not in err and "error connecting" not in err  # the pool's logs
        assert "claimed run r00 (claim 2)" in err, err  # resumed from its log
        marks = _marks(tmp_path)
        assert sorted(marks) == sorted(f"r00:s{i}" for i in range(STEPS))
        # at most the step in flight again, once a claim that ended early: one, the
        # outage's (under load a late renewal of the 2 s lease can end one more claim,
        # whose step in flight then runs again too; never any other step)
        claims = len(re.findall(r"claimed run r00 \(claim \d+\)", err))
        said = "\n".join(line for line in err.splitlines() if "r00" in line)
        assert sum(n - 1 for n in marks.values()) <= claims - 1, f"{marks}\n{said}"
        assert _outputs(url, 1) == {"r00": EXPECTED}


def test_a_run_whose_lock_the_server_ended_stops_and_resumes(tmp_path: Path,
                                                             postgres_url: str) -> None:
    """`lwtool run` on a PostgreSQL world whose server ends the session holding the
    run's lock mid-step: the step's result is not committed, the run stops with one line
    naming the lost lock and how to resume; resumed, it completes with an uninterrupted
    run's output, the step in flight called again and no other."""
    from tests.conftest import run_cli
    from tests.world.test_workers import TOOLS, _chain

    _chain(tmp_path / "marks.lwir.json")
    (tmp_path / "in.json").write_text('{"run": "r"}')
    env = {"LWTOOL_TEST_DIR": str(tmp_path), "LWTOOL_TEST_URL": postgres_url,
           "LWTOOL_TEST_END_LOCK": "r:s5"}
    args = ["--tools", TOOLS, "--world", postgres_url, "--data-dir", str(tmp_path / "d")]
    first = run_cli("run", str(tmp_path / "marks.lwir.json"), "-i", str(tmp_path / "in.json"),
                    "--run-id", "r", *args, env=env)
    assert first.returncode == 2, first.stderr
    assert first.stderr.splitlines()[-1] == (
        f"lwtool: run r lost its lock: PostgreSQL at {where(postgres_url)} closed the "
        "connection holding it; this process commits nothing more of it; resume it with "
        f"`lwtool replay r --tools {TOOLS} --world {postgres_url}`"), first.stderr
    assert (tmp_path / "ended").exists()
    again = run_cli("replay", "r", "--json", *args, env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["output"] == EXPECTED
    marks = _marks(tmp_path)
    assert marks["r:s5"] == 2 and sum(marks.values()) == STEPS + 1
