"""What a WorkflowVersion is registered with beside its LWIR (the spec's "validation
metadata"): the validator that checked it and what it found (with the uses of lwtool's
extensions, outside the spec's portable LWIR), and the capability
snapshot it was checked against (each permitted tool's declared schemas; the model
slots) with that snapshot's hash.

Recorded once, when the version is first registered with it: like the version, it
never changes. A tool's entry is `null` where the registrar had no tools (`lwtool run
--enqueue` without `--tools`): nothing is pinned for it. Workers compare their own
tools with the snapshot before they start a queued run (lwtool.runtime.worker): a
tool whose declared schemas differ is a drifted surface, never executed silently."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from lwtool._version import __version__
from lwtool.canonical.digest import sha256_of_json
from lwtool.source.finding import Finding, Severity
from lwtool.tools import Tool

VALIDATOR = f"lwtool {__version__}"
PIN = "@"  # a need `NAME@sha256:...`: only a worker whose tool NAME has that surface


class SurfaceDrift(Exception):
    """Tools here differ from the surface a version pinned: `pins`, name -> its hash."""

    def __init__(self, pins: Mapping[str, str], message: str) -> None:
        super().__init__(message)
        self.pins = dict(pins)


def surface_hash(tool: Tool) -> str:
    """A tool's declared surface: the hash of its input and output schemas (its code
    and description may change; what steps send it and read back may not)."""
    return sha256_of_json({"input": _schema(tool.input_schema),
                           "output": _schema(tool.output_schema)})


def _schema(value: Any) -> Any:
    return value if isinstance(value, Mapping) else None


def capability_snapshot(lwir: Mapping[str, Any], tools: Mapping[str, Tool] | None
                        ) -> dict[str, Any]:
    """The LWIR's permitted tools (each one's surface hash; None where `tools` is None
    or lacks it) and model slots."""
    permissions = lwir.get("permissions") or {}
    names = sorted({str(name) for name in permissions.get("tools") or []})
    return {"tools": {name: surface_hash(tools[name]) if tools is not None and name in tools
                      else None for name in names},
            "models": sorted({str(slot) for slot in permissions.get("models") or []})}


def version_meta(lwir: Mapping[str, Any], findings: Sequence[Finding],
                 tools: Mapping[str, Tool] | None, document: Any = None) -> dict[str, Any]:
    """The record of a version validated with `findings` against `tools` (`document`:
    the LWIR loaded, when the caller has it)."""
    snapshot = capability_snapshot(lwir, tools)
    errors = sum(f.severity is Severity.ERROR for f in findings)
    return {"validator": VALIDATOR,
            "validation": {"ok": errors == 0, "errors": errors,
                           "findings": [{"code": f.code, "severity": str(f.severity),
                                         "pointer": f.pointer, "message": f.message}
                                        for f in sorted(findings, key=Finding.sort_key)],
                           "portable": _portable(document or _loaded(lwir))},
            "capabilities": snapshot, "capabilitiesHash": sha256_of_json(snapshot),
            "registeredAt": time.time()}


def _portable(document: Any) -> dict[str, Any]:
    """Whether the loaded LWIR keeps to the spec's portable subset; where it does not."""
    from lwtool.validate.portable import portable_findings

    found = portable_findings(document, "Workflow")
    return {"ok": not found, "extensions": [{"pointer": f.pointer, "message": f.message}
                                            for f in sorted(found, key=Finding.sort_key)]}


def _loaded(lwir: Mapping[str, Any]) -> Any:
    """The LWIR as a Document (what validation and the portability check read)."""
    import json

    from lwtool.source.loader import load_text

    return load_text(json.dumps(lwir, ensure_ascii=False), "<lwir>.json")


def validated_meta(lwir: Mapping[str, Any], tools: Mapping[str, Tool] | None
                   ) -> dict[str, Any]:
    """`version_meta` for a caller that kept no findings: the LWIR validated here."""
    from lwtool.validate.run import validate_document

    document = _loaded(lwir)
    return version_meta(lwir, validate_document(document), tools, document)


def pinned(meta: Mapping[str, Any] | None) -> dict[str, str]:
    """Tool name -> the surface hash the version was registered with (pinned ones)."""
    tools = ((meta or {}).get("capabilities") or {}).get("tools") or {}
    return {str(name): str(value) for name, value in tools.items() if isinstance(value, str)}


def drifted(meta: Mapping[str, Any] | None, tools: Mapping[str, Tool]) -> dict[str, str]:
    """The pinned tools whose surface differs here (absent ones are not: a missing
    tool is the worker's MissingTools): name -> the hash the version pinned."""
    return {name: pin for name, pin in pinned(meta).items()
            if name in tools and surface_hash(tools[name]) != pin}


def pin_needs(pins: Mapping[str, str]) -> list[str]:
    """Queue needs that only a worker whose tools have these surfaces serves."""
    return [f"{name}{PIN}{pin}" for name, pin in sorted(pins.items())]


def served_pins(tools: Mapping[str, Tool]) -> list[str]:
    """What a worker's tools serve of pinned needs: `NAME@HASH` for each."""
    return [f"{name}{PIN}{surface_hash(tool)}" for name, tool in sorted(tools.items())]


def drift_message(version_id: str, pins: Mapping[str, str],
                  tools: Mapping[str, Tool]) -> str:
    """Which tools differ from the version's snapshot, in one sentence."""
    named = ", ".join(f"{name} (registered {pin[:15]}, here {surface_hash(tools[name])[:15]})"
                      for name, pin in sorted(pins.items()))
    return (f"the schemas of tools differ from those WorkflowVersion {version_id[:15]} was "
            f"registered with: {named}")
