"""lwtool: an LWIR-first toolchain for declarative AI workflows.

The public API is re-exported lazily (PEP 562), so that `lwtool validate` does not pay
for importing the runtime.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from lwtool._version import __version__ as __version__

_EXPORTS = {
    "CapabilityDriftError": "lwtool.record.errors",
    "RunFailedError": "lwtool.record.errors",
    "RunWaitingError": "lwtool.record.errors",
    "TransientError": "lwtool.record.errors",
    "ToolRegistry": "lwtool.tools",
    "create_tool_registry": "lwtool.tools",
    "ToolContext": "lwtool.tools",  # a tool's second argument: ctx.secret(name)
    "Secrets": "lwtool.capability.secrets",  # a broker: secrets=Secrets({...})
    "model": "lwtool.authoring.definitions",
    "LockedWorkflow": "lwtool.runtime.api",
    "WorkflowInvalid": "lwtool.runtime.api",
    "local_world": "lwtool.world.local",
    "postgres_world": "lwtool.world.postgres",
    "lock_workflow": "lwtool.runtime.api",
    "replay_run": "lwtool.runtime.api",
    "respond": "lwtool.runtime.respond",
    "run_definition": "lwtool.planner.api",
    "run_workflow": "lwtool.planner.api",  # LWIR, or a definition planned first
    "define_workflow": "lwtool.authoring.definitions",
    "chain_workflows": "lwtool.authoring.builders",
    "load_definition": "lwtool.planner.api",
    "run_orchestration": "lwtool.orchestrate.api",
    "as_harness_workflow": "lwtool.orchestrate.compose",
    "create_harness": "lwtool.orchestrate.compose",
    "ScriptedModel": "lwtool.calls.scripted",
    "skill": "lwtool.authoring.definitions",
    "new_event_loop": "lwtool.runtime.event_loop",  # asyncio.Runner(loop_factory=...)
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lwtool' has no attribute {name!r}")
    return getattr(import_module(module), name)
