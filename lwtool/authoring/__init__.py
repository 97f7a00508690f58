"""Author LWIR workflows and WorkflowDefinitions in Python; `lwtool generate` writes
them as the same files the CLI reads (see lwtool.authoring.builders). Its names load on
first use: `lwtool validate` reads one helper here (authoring.snapshot) without the
builders."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    **dict.fromkeys(("Step", "Workflow", "array_output", "chain_workflows", "choice",
                     "object_output", "text", "workflow"), "lwtool.authoring.builders"),
    **dict.fromkeys(("Definition", "define_workflow", "memory", "model_slot", "planner",
                     "skill", "worker"), "lwtool.authoring.definitions"),
    "to_schema": "lwtool.authoring.schemas",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lwtool.authoring' has no attribute {name!r}")
    return getattr(import_module(module), name)
