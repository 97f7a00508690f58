"""Capability drift of a workflow run: what it depends on outside its LWIR (its tools'
fingerprints, its model map, its harness), recorded in RunStarted, compared on resume.

A deliberate change is accepted with `lwtool replay RUN --accept-drift`
(`replay_run(..., accept_drift=True)`): a CapabilityDriftAccepted event records what
was and what is, and later resumes compare against what was accepted. A log written
before tool fingerprints were recorded (a tool's entry is `true`) is compared by the
tools' presence only. Where a tool comes from (`toolOrigins`: an MCP tool's server, its
name and version, its schema hash) is recorded beside the fingerprints and named in
the message, never compared: a server's new version with the same schemas is no drift.
"""

from __future__ import annotations

import os
from typing import Any

from lwtool.world.base import Event, NewEvent

ACCEPTED = "CapabilityDriftAccepted"
ORIGINS = "toolOrigins"


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
    return _compared({**recorded, "tools": then}) != _compared({**current, "tools": now})


def _compared(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in capabilities.items() if key != ORIGINS}


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
                "started: " + ", ".join(_with_origin(t, recorded, current) for t in changed)
                + accept)
    if recorded.get("harness") != current.get("harness"):
        return (f"the run started under the harness {recorded.get('harness')!r}, now "
                f"{current.get('harness')!r} (pass the same --harness)")
    return (f"the run started with models {recorded.get('models')} and tools "
            f"{sorted(then)}; now {current.get('models')} and {sorted(now)}" + accept)


def _with_origin(tool: str, recorded: dict[str, Any], current: dict[str, Any]) -> str:
    """`time.now (MCP server 'time': mcp-time 1.0 -> 1.1)` where the tool's origin says."""
    then = (recorded.get(ORIGINS) or {}).get(tool) or {}
    now = (current.get(ORIGINS) or {}).get(tool) or {}
    if not now.get("mcpServer"):
        return tool

    name, version = now.get("serverName") or "?", now.get("serverVersion") or "?"
    said = f"{name} {version}"
    if then and (then.get("serverName"), then.get("serverVersion")) != (name, version):
        was = then.get("serverVersion") or "?"
        said = (f"{name} {was} -> {version}" if then.get("serverName") == name
                else f"{then.get('serverName') or '?'} {was} -> {said}")
    return f"{tool} (MCP server '{now['mcpServer']}': {said})"


def accepted(recorded: dict[str, Any], current: dict[str, Any]) -> NewEvent:
    return NewEvent(ACCEPTED, {"before": recorded, "after": current, "pid": os.getpid()})
