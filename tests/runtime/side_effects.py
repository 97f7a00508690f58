"""Tools for runtime tests. Every call appends `<tool>:<key>` to $LWTOOL_TEST_DIR/calls.log
(the side-effect counter). A call whose key equals $LWTOOL_TEST_BLOCK writes
`blocked-<key>` beside it and then hangs, so a test can SIGKILL the process mid-step.
$LWTOOL_TEST_SLEEP (seconds) makes every call take that long (bench/soak.py)."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any

from lwtool import ToolRegistry, TransientError

tools = ToolRegistry()


def _note(tool: str, key: str) -> bool:
    """Count the call; True when this call should hang (the caller hangs its own way).
    Without LWTOOL_TEST_DIR (a test that only reads the run) nothing is counted."""
    if not os.environ.get("LWTOOL_TEST_DIR"):
        return False
    folder = Path(os.environ["LWTOOL_TEST_DIR"])
    with open(folder / "calls.log", "a", encoding="utf-8") as fh:
        fh.write(f"{tool}:{key}\n")
        fh.flush()
        os.fsync(fh.fileno())
    if os.environ.get("LWTOOL_TEST_BLOCK") == key:
        _mark(folder / f"blocked-{key}", str(os.getpid()))
        return True
    return False


SLEEP = float(os.environ.get("LWTOOL_TEST_SLEEP", "0"))


def _hang_sync(blocked: bool) -> None:
    time.sleep(3600 if blocked else SLEEP)


@tools.tool()
def record(args: dict[str, Any]) -> dict[str, Any]:
    """Return the key and the value it was given."""
    _hang_sync(_note("record", str(args["key"])))
    return {"key": args["key"], "value": args.get("value")}


@tools.tool()
def improve(args: dict[str, Any]) -> dict[str, Any]:
    text = args["text"] + "!"
    _hang_sync(_note("improve", f"improve-{text.count('!')}"))
    return {"text": text}


@tools.tool(name="checkText")
def check_text(args: dict[str, Any]) -> dict[str, Any]:
    _hang_sync(_note("check", f"check-{args['text'].count('!')}"))
    return {"ok": args["text"].count("!") >= int(os.environ.get("LWTOOL_TEST_ROUNDS", "3")),
            "text": args["text"]}


@tools.tool()
def publish(args: dict[str, Any]) -> dict[str, Any]:
    _hang_sync(_note("publish", "publish"))
    return {"text": args["text"], "rounds": args["rounds"]}


@tools.tool()
async def work(args: dict[str, Any]) -> dict[str, Any]:
    """An async branch worker."""
    if _note("work", str(args["id"])):
        await asyncio.sleep(3600)  # hang without freezing the other branches
    await asyncio.sleep(float(args.get("sleep", 0)) + SLEEP)
    if args.get("fail"):
        raise RuntimeError(f"item {args['id']} is broken")
    return {"id": args["id"], "double": args["n"] * 2}


@tools.tool()
def count(args: dict[str, Any]) -> dict[str, Any]:
    """One more than `n`, quickly: counted without an fsync (a kill keeps what the
    process wrote). A blocked call writes the name of its thread in its file."""
    n = int(args["n"]) + (0 if args.get("last") else 1)
    key = f"count-{n}{'-last' if args.get('last') else ''}"
    folder = Path(os.environ["LWTOOL_TEST_DIR"])
    with open(folder / "calls.log", "a", encoding="utf-8") as fh:
        fh.write(f"count:{key}\n")
    if os.environ.get("LWTOOL_TEST_BLOCK") == key:
        _mark(folder / f"blocked-{key}", threading.current_thread().name)
        time.sleep(3600)
    return {"n": n}


@tools.tool()
def bad_output(args: dict[str, Any]) -> dict[str, Any]:
    _hang_sync(_note("bad_output", "x"))
    return {"unexpected": True}


_FLAKY: dict[str, int] = {}


@tools.tool()
def flaky(args: dict[str, Any]) -> dict[str, Any]:
    """Fails transiently the first `fails` times per key in this process."""
    key = str(args["key"])
    _hang_sync(_note("flaky", key))
    _FLAKY[key] = _FLAKY.get(key, 0) + 1
    if _FLAKY[key] <= int(args.get("fails", 1)):
        raise TransientError("rate limited, try again")
    return {"key": key, "tries": _FLAKY[key]}


@tools.tool()
def hang_forever(args: dict[str, Any]) -> dict[str, Any]:
    """A synchronous tool that never returns (its thread cannot be stopped)."""
    _note("hang_forever", "x")
    time.sleep(3600)
    return {}


@tools.tool()
def chatty(args: dict[str, Any]) -> dict[str, Any]:
    """Prints to stdout from Python and from file descriptor 1."""
    print("hello from a tool")
    os.write(1, b"raw bytes on fd 1\n")
    return {"said": "hi"}


@tools.tool()
def gate(args: dict[str, Any]) -> dict[str, Any]:
    """Fails while $LWTOOL_TEST_DIR/gate-closed exists (a fault a person then fixes)."""
    _note("gate", str(args.get("key", "gate")))
    if (Path(os.environ["LWTOOL_TEST_DIR"]) / "gate-closed").exists():
        raise RuntimeError("the gate is closed")
    return {"key": args.get("key", "gate"), "open": True}


def _mark(path: Path, text: str) -> None:
    """Write a marker whole before it shows (a test reads it the moment it exists)."""
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    part.replace(path)
