"""The Python floor of a step: what a 200-step tool.call chain costs per step when
every step does the work an lwtool step must do, written as one plain loop (no asyncio,
no scheduler, no classes, no checks beyond the output schema), against the local
world's own tables: evaluate the input (a dictionary lookup), hash it, build and hash
the worker manifest and the step's configuration, call the tool, check its output
with the compiled schema, serialize the output and hash it (its artifact), make the
six events of the spec's vocabulary, serialize each, pack them in one row and chain
its hash, and commit the artifact row, that row and the run head in one transaction
(as the local world writes a step's commit since packed rows), in its 1 KB pages.

bench/runtime.py prints it beside lwtool's figures: lwtool's overhead over this loop is
what its scheduler, harness and recorder cost; this loop's distance to the raw rows
floor is what the work itself costs in Python.

Run: .venv/bin/python bench/python_floor.py [--steps N] [--reps N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _generate import chain_lwir  # noqa: E402

from lwtool.world.local_artifacts import PUT_INLINE  # noqa: E402
from lwtool.world.local_events import INSERT_KEYED  # noqa: E402
from lwtool.world.local_store import PAGE_SIZE, SCHEMA, WAL_CHECKPOINT_PAGES  # noqa: E402

SORTED = orjson.OPT_SORT_KEYS
RUN = "run_019ae5c0b1d2f00d1234"
VERSION = "sha256:" + "a" * 64
ZERO_USAGE = {"inputTokens": 0, "outputTokens": 0, "cacheReadTokens": 0,
              "cacheWriteTokens": 0}


def _hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def echo(args: Any) -> Any:
    return {"value": str(args.get("value"))}


def chain(folder: Path, synchronous: str, steps: int = 200,
          commits: list[float] | None = None) -> float:
    """Microseconds per step of the plain loop; with `commits`, the seconds spent in
    BEGIN and COMMIT are appended to it (as `bench/profile_step.py --split` splits a
    step of lwtool's)."""
    db = sqlite3.connect(folder / f"floor-{synchronous}.db", isolation_level=None)
    db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # the local world's
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES[synchronous]}")
    db.executescript(SCHEMA)
    db.execute("INSERT INTO versions VALUES (?, '{}')", (VERSION,))
    db.execute("INSERT INTO runs VALUES (?, ?, 'running', 0, 0, '{}', '{}', 0, '', 1)",
               (RUN, VERSION))
    lwir = chain_lwir(steps, uses="tool.call")
    validator = jsonschema_rs.Draft202012Validator(lwir["steps"][0]["output"]["schema"])
    tools_hash = _hash(orjson.dumps(["echo"], option=SORTED))
    base, seq, head = 2 ** 32, 0, ""
    previous: Any = {"value": "x"}
    started = time.perf_counter()
    for step in lwir["steps"]:
        sid = path = step["id"]
        step_input = {"value": previous["value"], "n": step["input"]["n"]}
        input_hash = _hash(orjson.dumps(step_input, option=SORTED))
        manifest = {"harnessId": "lwtool.workflow", "workflowDefinitionHash": None,
                    "workflowVersionId": VERSION, "stepPath": path,
                    "stepConfigHash": _hash(orjson.dumps(step, option=SORTED)),
                    "skillsHash": tools_hash, "allowedToolsHash": tools_hash,
                    "bashCapabilitiesHash": tools_hash, "memoryStoreIds": []}
        output = echo(step_input)
        if not validator.is_valid(output):
            raise SystemExit("invalid output")
        data = orjson.dumps(output)
        digest = hashlib.sha256(data).hexdigest()
        ref = "artifact://sha256:" + digest
        events = [
            ("StepAttemptStarted", {"stepId": sid, "uses": "tool.call", "visit": 0,
                                    "attempt": 1, "inputHash": input_hash,
                                    "input": step_input}),
            ("harness.session.started", {"runId": RUN, "role": "worker",
                                         "task": {"kind": "execute_step"},
                                         "manifest": manifest,
                                         "manifestHash": _hash(orjson.dumps(
                                             manifest, option=SORTED))}),
            ("harness.execute_step.started", {"stepPath": path, "stepKind": "tool.call",
                                              "inputHash": input_hash, "toolName": "echo"}),
            ("harness.execute_step.succeeded", {"stepPath": path,
                                                "outputHash": "sha256:" + digest,
                                                "durationMs": 0}),
            ("harness.session.completed", {"runId": RUN, "usage": dict(ZERO_USAGE)}),
            ("StepCompleted", {"stepId": sid, "uses": "tool.call", "visit": 0, "attempt": 1,
                               "envelope": {"output": output, "outputRef": ref,
                                            "artifacts": [], "metadata": {
                                                "uses": "tool.call", "outputMode": "object",
                                                "schemaHash": tools_hash}}}),
        ]
        now = time.time()
        at = repr(now)
        before = (seq, head)
        first = seq + 1
        seq += len(events)
        text = "[" + ",".join(f'["{type_}","{path}",{orjson.dumps(payload).decode()}]'
                              for type_, payload in events) + "]"
        types = " ".join(type_ for type_, _ in events)
        head = "v3:" + hashlib.sha256(f"{head}\n{RUN}\n{first}\n{len(types)}:{types}\n{at}\n"
                                      f"-\n{text}".encode()).hexdigest()
        rows = [(base + first, RUN, first, types, None, text, now, head)]
        began = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        if commits is not None:
            commits.append(time.perf_counter() - began)
        db.execute(PUT_INLINE, (ref, data))
        db.execute("UPDATE runs SET last_seq = ?, last_hash = ?, updated_at = ? WHERE "
                   "run_id = ? AND last_seq = ? AND last_hash = ?", (seq, head, now, RUN,
                                                                     *before))
        db.executemany(INSERT_KEYED, rows)
        began = time.perf_counter()
        db.execute("COMMIT")
        if commits is not None:
            commits.append(time.perf_counter() - began)
        previous = output
    elapsed = time.perf_counter() - started
    db.close()
    return elapsed / steps * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--dir", default=str(HERE.parent))
    options = parser.parse_args()
    figures: dict[str, list[float]] = {"NORMAL": [], "FULL": []}
    rests: dict[str, list[float]] = {"NORMAL": [], "FULL": []}
    with tempfile.TemporaryDirectory(dir=options.dir) as tmp:
        for round_ in range(options.reps):
            for synchronous in figures:
                folder = Path(tmp) / f"{round_}-{synchronous}"
                folder.mkdir()
                commits: list[float] = []
                per_step = chain(folder, synchronous, options.steps, commits)
                figures[synchronous].append(per_step)
                rests[synchronous].append(per_step - sum(commits) / options.steps * 1e6)
    print("Python floor of a step (a plain loop doing a step's work, one commit): " + ", ".join(
        f"synchronous={name} {statistics.median(values):.0f} us (outside BEGIN and COMMIT "
        f"{statistics.median(rests[name]):.0f} us)" for name, values in figures.items()))


if __name__ == "__main__":
    main()
