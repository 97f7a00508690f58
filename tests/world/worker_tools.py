"""The workers test's tool: `mark({run, step, value})` appends `<run>:<step>` to
$LWTOOL_TEST_DIR/marks.log (one write, O_APPEND: lines from many processes never
interleave), and blocks for good on the step named by LWTOOL_TEST_BLOCK (after writing
`blocked`). Each call's label and process id go to who.log too; a call whose `value`
equals its `failOn` raises. A call takes LWTOOL_TEST_SLEEP seconds (0.005)."""

from __future__ import annotations

import os
import time
from pathlib import Path


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
    if os.environ.get("LWTOOL_TEST_BLOCK") == label:
        (folder / "blocked").write_text(str(os.getpid()))
        time.sleep(3600)
    time.sleep(float(os.environ.get("LWTOOL_TEST_SLEEP", "0.005")))
    return {"value": f"{args['value']}-{args['step']}"}


tools = {"mark": mark}
