"""An outer loop's result, read from what the loop committed: its terminal event and
its cycles. One shape for the loop as it ends (lwtool.planner.outer_loop) and for
`lwtool replay LOOP` (the interpreter): the output with the cycles and the usage of
everything the loop stands on, or the RunFailedError with `outer_loop_id`."""

from __future__ import annotations

from typing import Any

from lwtool.record.errors import RunFailedError
from lwtool.world.base import Event, NewEvent, World


def loop_error(loop_id: str, version_id: str, cause: Any, message: str,
               cycles: list[dict[str, Any]]) -> RunFailedError:
    error = RunFailedError(loop_id, version_id, cause, message)
    error.outer_loop_id = loop_id
    error.last_cycle_output = cycles[-1].get("output") if cycles else None
    return error


def loop_result(world: World, loop_id: str, version_id: str, terminal: Event | NewEvent,
                cycles: list[dict[str, Any]]) -> dict[str, Any]:
    """The finished loop's result; raises its RunFailedError when it failed."""
    from lwtool.record.rollup import rolled_usage

    payload = terminal.payload
    if terminal.type == "RunFailed":
        raise loop_error(loop_id, version_id, payload.get("causeCode", "outer_loop_exhausted"),
                         str(payload.get("message", "")), cycles)
    last = cycles[-1] if cycles else {}
    return {"outerLoopId": loop_id, "runId": last.get("runId"),
            "workflowVersionId": last.get("workflowVersionId"), "status": "completed",
            "output": payload.get("output"), "usage": rolled_usage(world, loop_id)["total"],
            "artifacts": [], "cycles": cycles}
