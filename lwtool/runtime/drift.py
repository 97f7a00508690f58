"""Capability drift of a workflow run: what it depends on outside its LWIR (its tools'
fingerprints, its model map, its harness), recorded in RunStarted, compared on resume.

A deliberate change is accepted with `lwtool replay RUN --accept-drift`
(`replay_run(..., accept_drift=True)`): a CapabilityDriftAccepted event records what
was and what is, and later resumes compare against what was accepted. A log written
before tool fingerprints were recorded (a tool's entry is `true`) is compared by the
tools' presence only.
"""

from __future__ import annotations

import os
from typing import Any

from lwtool.world.base import Event, NewEvent

ACCEPTED = "CapabilityDriftAccepted"


def recorded_capabilities(events: list[Event], default_harness: str) -> dict[str, Any]:
    """What the run last agreed to: RunStarted's capabilities, or the last accepted."""
    recorded: dict[str, Any] = {}
    for event in events:
        if event.type == "RunStarted":
            recorded = dict(event.payload.get("capabilities") or {})
        elif event.type == ACCEPTED:
            recorded = dict(event.payload.get("after") or {})
    if recorded:  # a log from before harness ids were recorded ran the default harness
        recorded = {"harness": default_harness, **recorded}
    return recorded


def differs(recorded: dict[str, Any], current: dict[str, Any]) -> bool:
    """Whether what the run depends on changed. A tool that was absent (`false`: a
    code.run step's permitted tool, or a run from before tools were required) and is
    given now is no change: the run could not have called it, so nothing it recorded
    came from another tool."""
    then = recorded.get("tools") or {}
    now = {name: bool(value) if then.get(name) is True  # an older log
           else False if then.get(name) is False else value
           for name, value in (current.get("tools") or {}).items()}
    return {**recorded, "tools": then} != {**current, "tools": now}


def message(recorded: dict[str, Any], current: dict[str, Any]) -> str:
    """What changed, in one sentence, with the way to go on."""
    then, now = recorded.get("tools") or {}, current.get("tools") or {}
    missing = [t for t, value in now.items() if then.get(t) and not value]
    if missing:
        return ("tools the run used are not registered now: " + ", ".join(missing)
                + " (pass the same --tools)")
    changed = [t for t, value in now.items()
               if value and then.get(t) not in (None, True) and then.get(t) != value]
    accept = " (or accept the change: lwtool replay RUN --accept-drift)"
    if changed:
        return ("the code, description or schemas of tools the run used changed since it "
                "started: " + ", ".join(changed) + accept)
    if recorded.get("harness") != current.get("harness"):
        return (f"the run started under the harness {recorded.get('harness')!r}, now "
                f"{current.get('harness')!r} (pass the same --harness)")
    return (f"the run started with models {recorded.get('models')} and tools "
            f"{sorted(then)}; now {current.get('models')} and {sorted(now)}" + accept)


def accepted(recorded: dict[str, Any], current: dict[str, Any]) -> NewEvent:
    return NewEvent(ACCEPTED, {"before": recorded, "after": current, "pid": os.getpid()})
