"""A PostgreSQL server lost mid-run: the worker neither dies nor loses anything; it
waits, looking again less and less often, and once the server is back the run resumes
from its log and completes with an uninterrupted run's output (a private cluster,
stopped with `pg_ctl -m immediate` and started again)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lwtool.world.postgres import POOL_WAIT
from tests.fixtures.postgres import PrivateCluster, database
from tests.world.test_workers import EXPECTED, STEPS, _enqueue, _marks, _outputs, _worker

pytestmark = pytest.mark.slow


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
    with database(cluster.url) as url:
        _enqueue(tmp_path, url, 1)
        worker = _worker(tmp_path, url, "--lease-seconds", "2", LWTOOL_TEST_SLEEP="0.2")
        deadline = time.monotonic() + 60
        while not (tmp_path / "marks.log").exists() or len(_marks(tmp_path)) < 4:
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        cluster.stop()  # mid-run: a step is executing, its result not yet committed
        time.sleep(POOL_WAIT + 3)  # longer than a commit waits for a connection
        assert worker.poll() is None  # still there, waiting for the server
        cluster.start()
        _, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err
        assert "run r00 left for later: PostgreSQL at" in err, err
        assert "discarding" not in err and "error connecting" not in err  # the pool's logs
        assert "claimed run r00 (claim 2)" in err, err  # resumed from its log
        marks = _marks(tmp_path)
        assert sorted(marks) == sorted(f"r00:s{i}" for i in range(STEPS))
        assert sum(n - 1 for n in marks.values()) <= 1  # at most the step in flight again
        assert _outputs(url, 1) == {"r00": EXPECTED}
