"""The workers test's tool: `mark({run, step, value})` appends `<run>:<step>` to
$LWTOOL_TEST_DIR/marks.log (one write, O_APPEND: lines from many processes never
interleave), and blocks for good on the step named by LWTOOL_TEST_BLOCK (after writing
`blocked`). Each call's label and process id go to who.log too; a call whose `value`
equals its `failOn` raises, and so does the first call with `failOnce`; one with
`gate` waits for an `open-gate` file (after writing `gate-started`). A call takes
LWTOOL_TEST_SLEEP seconds (0.005). The first call on the step named by
LWTOOL_TEST_END_LOCK has the server end the session holding its run's lock (the
calling process's), as a server restart would. `loop_tools` adds
`hold({seconds})`, registered as not blocking, so it holds up its run's event loop
(and writes when, to held.log)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def mark(args: dict) -> dict:
    folder = Path(os.environ["LWTOOL_TEST_DIR"])
    label = f"{args['run']}:{args['step']}"
    fd = os.open(folder / "marks.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{label}\n".encode())
    finally:
        os.close(fd)
    fd = os.open(folder / "who.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{label} {os.getpid()}\n".encode())
    finally:
        os.close(fd)
    if "failOn" in args and args["failOn"] == args["value"]:
        raise ValueError(f"{label} fails on purpose")
    if args.get("failOnce") and not (folder / "failed-once").exists():
        (folder / "failed-once").touch()
        raise ValueError(f"{label} fails once on purpose")
    if args.get("gate"):  # says it started, then waits for the test to open the gate
        (folder / "gate-started").touch()
        while not (folder / "open-gate").exists():
            time.sleep(0.02)
    if os.environ.get("LWTOOL_TEST_BLOCK") == label:
        (folder / "blocked").write_text(str(os.getpid()))
        time.sleep(3600)
    if os.environ.get("LWTOOL_TEST_END_LOCK") == label and not (folder / "ended").exists():
        _end_lock_session(args["run"])
        (folder / "ended").write_text(label)
    time.sleep(float(os.environ.get("LWTOOL_TEST_SLEEP", "0.005")))
    return {"value": f"{args['value']}-{args['step']}"}


def _end_lock_session(run_id: str) -> None:
    import psycopg

    with psycopg.connect(os.environ["LWTOOL_TEST_URL"], autocommit=True) as conn:
        ended = conn.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE "
            "application_name = %s AND datname = current_database()",
            (f"lwtool run lock pid {os.getpid()}",)).fetchall()
    assert ended == [(True,)], (run_id, ended)


tools = {"mark": mark}


def hold(args: dict) -> dict:
    started = time.time()
    time.sleep(float(args["seconds"]))
    folder = os.environ.get("LWTOOL_TEST_DIR")
    if folder:  # when it held its loop: "<start> <end>" (seconds since the epoch)
        Path(folder, "held.log").write_text(f"{started} {time.time()}")
    return {"held": args["seconds"]}


def _loop_tools() -> Any:
    from lwtool.tools import ToolRegistry

    registry = ToolRegistry()
    registry.register("mark", mark)
    registry.register("hold", hold, blocking=False)  # a broken promise, on purpose
    return registry


loop_tools = _loop_tools()


def _with_schema(edition: str) -> Any:
    """`mark` declaring an input schema: two editions whose schemas differ (what a
    version pins of a tool: lwtool.lock.version_record)."""
    from lwtool.tools import ToolRegistry

    registry = ToolRegistry()
    registry.register("mark", mark, input_schema={
        "type": "object", "description": f"mark, edition {edition}",
        "properties": {"run": {"type": "string"}, "step": {"type": "string"}}})
    return registry


schema_a, schema_b = _with_schema("a"), _with_schema("b")
