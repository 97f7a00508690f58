"""A worker's log on stderr: a line per event, `text` (a UTC timestamp, the worker's
name, the words) or `json` (one object a line: ts, level, worker, event, runId,
stepPath, message). Info lines (claims, ends, and a line per step attempt started,
completed or failed, from the events the worker commits) are written with `--verbose` or
in JSON; warnings (the world away, a lease lost, a step's last attempt failed) always."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any, TextIO


def utc_stamp(at: float | None = None) -> str:
    """`2026-12-06T06:40:01.123Z`."""
    at = time.time() if at is None else at
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 1000):03d}Z"


class WorkerLog:
    def __init__(self, worker: str, fmt: str = "text", verbose: bool = False,
                 stream: TextIO | None = None) -> None:
        self.worker, self.fmt = worker, fmt
        self.verbose = verbose or fmt == "json"
        self.stream = stream or sys.stderr
        self._guard = threading.Lock()  # heartbeat threads write too

    def __call__(self, event: str, message: str, run: str | None = None,
                 step: str | None = None, level: str = "info") -> None:
        if level == "info" and not self.verbose:
            return
        if self.fmt == "json":
            record: dict[str, Any] = {"ts": utc_stamp(), "level": level,
                                      "worker": self.worker, "event": event}
            if run is not None:
                record["runId"] = run
            if step is not None:
                record["stepPath"] = step
            line = json.dumps({**record, "message": message}, ensure_ascii=False)
        else:
            from lwtool.observe.terminal import safe_text

            line = safe_text(f"{utc_stamp()} lwtool: worker {self.worker}: {message}")
        with self._guard:
            self.stream.write(line + "\n")
            self.stream.flush()

    def line(self, message: str) -> None:
        """A warning in words only (what lwtool.runtime.branches says)."""
        self("branches", message, level="warning")

    def steps(self, run_id: str, events: Iterable[Any]) -> None:
        """A line per step attempt started, step completed and attempt failed among the
        events a run committed."""
        for event in events:
            said = _step_line(event)
            if said is not None:
                self(said[0], said[1], run=run_id, step=event.step_path, level=said[2])


def _step_line(event: Any) -> tuple[str, str, str] | None:
    """(event, message, level) for a step's event, else None."""
    payload = event.payload or {}
    where = f"step {event.step_path}"
    if event.type == "StepAttemptStarted":
        return ("step_started", f"{where} ({payload.get('uses')}) attempt "
                f"{payload.get('attempt')} started", "info")
    if event.type == "StepCompleted":
        return "step_completed", f"{where} completed", "info"
    if event.type == "StepAttemptFailed":
        final = bool(payload.get("final"))
        return ("step_failed", f"{where} attempt {payload.get('attempt')} failed"
                f"{'' if final else ' (to be retried)'}: {payload.get('causeCode')}: "
                f"{payload.get('error')}", "warning" if final else "info")
    return None
