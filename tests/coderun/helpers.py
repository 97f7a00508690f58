"""LWIR with code.run steps for the code.run tests."""

from __future__ import annotations

import hashlib
from typing import Any


def code_step(step_id: str, source: str, *, needs: list[str] | None = None,
              output: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    pin = "sha256:" + hashlib.sha256(source.encode()).hexdigest()
    step: dict[str, Any] = {"id": step_id, "uses": "code.run", "with": {
        "entrypoint": "main.ts", "files": {"main.ts": {"content": source, "sha256": pin}},
        "sandbox": {"network": "deny", "env": "deny", "fs": "deny",
                    **extra.pop("sandbox", {})}}}
    if needs:
        step["needs"] = needs
    if output:
        step["output"] = output
    return {**step, **extra}


def workflow(*steps: dict[str, Any], tools: list[str] | None = None,
             models: list[str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "code", "version": "0.1.0"},
            "permissions": {"tools": tools or [], "models": models or []},
            "steps": list(steps)}
