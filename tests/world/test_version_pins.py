"""A WorkflowVersion's capability snapshot with real workers (a real PostgreSQL, real
worker processes): `run --enqueue --tools` pins the tools' schemas, a worker whose
tools have others never executes the run, and a row queued without the pin (an older
lwtool's) is handed back by the worker that finds the drift, to one that matches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.world.test_workers import EXPECTED, _chain, _marks, _worker

pytestmark = pytest.mark.slow
TOOLS = Path(__file__).parent / "worker_tools.py"
SCHEMA_A, SCHEMA_B = f"{TOOLS}:schema_a", f"{TOOLS}:schema_b"


def _enqueue(work: Path, url: str, run_id: str, *more: str) -> tuple[int, str]:
    if not (work / "marks.lwir.json").exists():
        _chain(work / "marks.lwir.json")
    (work / f"{run_id}.json").write_text(json.dumps({"run": run_id}))
    done = run_cli("run", str(work / "marks.lwir.json"), "-i", str(work / f"{run_id}.json"),
                   "--enqueue", "--run-id", run_id, "--world", url, *more)
    return done.returncode, done.stderr


def test_workers_execute_a_pinned_version_only_with_its_tools_schemas(
        tmp_path: Path, postgres_url: str) -> None:
    import psycopg

    assert _enqueue(tmp_path, postgres_url, "r1", "--tools", SCHEMA_A) == \
        (0, "lwtool: run r1 queued; `lwtool worker` processes execute it\n")
    record = json.loads(run_cli("version", "r1", "--world", postgres_url, "--json").stdout)
    pin = record["record"]["capabilities"]["tools"]["mark"]
    assert pin.startswith("sha256:") and record["record"]["validation"]["ok"] is True
    listed = run_cli("runs", "--world", postgres_url).stdout
    assert f"with tool mark (schemas {pin[:15]})" in listed, listed

    # tools that lack one the workflow calls: refused at enqueue
    lacking = f"{Path(__file__).parents[2] / 'examples' / 'tools.py'}:tools"
    code, err = _enqueue(tmp_path, postgres_url, "r0", "--tools", lacking)
    assert code == 2 and "mark" in err and "nothing was queued" in err, err

    # other schemas: refused at enqueue, and a worker with them claims nothing
    code, err = _enqueue(tmp_path, postgres_url, "r2", "--tools", SCHEMA_B)
    assert code == 2 and "the schemas of tools differ from those WorkflowVersion" in err \
        and "nothing was queued" in err, err
    other = _worker(tmp_path, postgres_url, "--tools", SCHEMA_B)
    _, err = other.communicate(timeout=60)
    assert other.returncode == 0 and "claimed run" not in err, err
    assert not (tmp_path / "marks.log").exists()

    # a row queued without the pin (as an older lwtool queued it)
    assert _enqueue(tmp_path, postgres_url, "r3")[0] == 0
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE lwtool.queue SET needs = NULL WHERE run_id = 'r3'")
    other = _worker(tmp_path, postgres_url, "--tools", SCHEMA_B)
    _, err = other.communicate(timeout=60)
    assert "run r3 handed back: this worker cannot serve it: the schemas of tools differ " \
        "from those WorkflowVersion" in err, err
    assert not (tmp_path / "marks.log").exists()  # nothing executed against other schemas
    assert f"with tool mark (schemas {pin[:15]})" in run_cli("runs", "--world",
                                                              postgres_url).stdout

    matching = _worker(tmp_path, postgres_url, "--tools", SCHEMA_A)
    _, err = matching.communicate(timeout=120)
    assert matching.returncode == 0 and err.count("claimed run") == 2, err
    assert set(_marks(tmp_path).values()) == {1} and len(_marks(tmp_path)) == 30
    for run_id in ("r1", "r3"):
        done = json.loads(run_cli("replay", run_id, "--world", postgres_url, "--json",
                                  "--tools", SCHEMA_A).stdout)
        assert done["output"] == EXPECTED
