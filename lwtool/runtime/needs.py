"""What a queued run needs of the worker that claims it, and what a worker serves: the
tools its tool.call steps name, and `model slot X` for each slot of its ai.generate
steps that the run's own model mapping (the definition's and `--models` at enqueue)
does not resolve. The PostgreSQL queue stores both as JSON arrays: a worker claims a
run only when the run's needs are among what it serves (lwtool.world.postgres_queue).
A need `NAME@sha256:...` pins a tool's surface (lwtool.lock.version_record): only a
worker whose tool NAME has those schemas serves it. A need `secret NAME` is a name of
the workflow's permissions.secrets: only a worker whose broker (its environment, or its
`--secrets FILE`) has NAME serves it (names only: no value leaves the worker)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from lwtool.lock.version_record import PIN, served_pins
from lwtool.steps.ai_generate import repair_slot
from lwtool.tools import ToolRegistry
from lwtool.validate.context import MODEL_STEPS, named_tools

SLOT = "model slot "  # a tool name never holds a space: no tool is taken for a slot
SECRET = "secret "


def run_needs(lwir: dict[str, Any], mapped: Mapping[str, Any],
              children: Iterable[dict[str, Any]] = ()) -> list[str]:
    """The tools and unresolved model slots a run of `lwir` (and of the `children` its
    workflow.invoke steps reach: their runs execute beside it) needs of its worker."""
    from lwtool.calls.models import UnresolvedModel, check_slots
    family = [lwir, *children]
    slots = []
    for slot in sorted(set().union(*(model_slots(d.get("steps") or []) for d in family))):
        try:
            check_slots([slot], mapped)
        except UnresolvedModel:
            slots.append(SLOT + slot)
    secrets = sorted({SECRET + str(n) for d in family
                      for n in (d.get("permissions") or {}).get("secrets") or ()})
    return sorted(set().union(*(needed_tools(d) for d in family))) + slots + secrets


def worker_serves(tools: ToolRegistry, models: Mapping[str, Any],
                  secrets: Iterable[str] = ()) -> list[str]:
    """What a worker with these tools, this models file and the secrets `secrets` names
    serves: each tool by its name and by its name pinned to its surface."""
    return tools.names() + served_pins(tools.tools) + \
        [SLOT + slot for slot in sorted(models)] + [SECRET + n for n in sorted(secrets)]


def describe(needs: list[str]) -> str:
    """`needs` in words: "tools a, b and model slot x"."""
    named = [n for n in needs if not n.startswith((SLOT, SECRET))]
    pinned = {n.partition(PIN)[0] for n in named if PIN in n}  # said once, with its pin
    tools = [_tool(n) for n in named if PIN in n or n not in pinned]
    slots = [n for n in needs if n.startswith(SLOT)]
    words = [f"tool{'s' if len(tools) > 1 else ''} {', '.join(tools)}"] if tools else []
    words += [f"model slot{'s' if len(slots) > 1 else ''} "
              f"{', '.join(s.removeprefix(SLOT) for s in slots)}"] if slots else []
    secrets = [n.removeprefix(SECRET) for n in needs if n.startswith(SECRET)]
    words += [f"secret{'s' if len(secrets) > 1 else ''} {', '.join(secrets)}"] \
        if secrets else []
    return " and ".join(words)


def _tool(need: str) -> str:
    """A tool need in words: `a`, or `a (schemas sha256:0123abcd)` when pinned."""
    name, pinned, surface = need.partition(PIN)
    return f"{name} (schemas {surface[:15]})" if pinned else name


def every_step(steps: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every step of a step list, parallel bodies included."""
    todo = list(steps)
    while todo:
        step = todo.pop()
        yield step
        todo.extend(step.get("steps") or [])


def model_slots(steps: list[dict[str, Any]]) -> set[str]:
    """The model slots the ai.generate and ai.agent steps of a step list (bodies
    included) use, their escalated repairs' too."""
    return {model for step in every_step(steps) if step.get("uses") in MODEL_STEPS
            for model in ((step.get("with") or {}).get("model"), repair_slot(step))
            if isinstance(model, str)}


def needed_tools(lwir: dict[str, Any]) -> set[str]:
    """The tools a run must be given: those the workflow's tool.call steps name and its
    ai.agent steps offer. (A code.run step's code may call any permitted tool; one it
    calls that is not given fails inside the code, which can handle it.)"""
    return {str(name) for step in every_step(lwir.get("steps") or [])
            for _, name in named_tools(step)}


def reachable_tools(lwir: dict[str, Any]) -> list[str]:
    """Every tool a run may call: its tool.call steps' and its grant's (code.run's reach)
    (the MCP servers a command starts for the run are these tools' only)."""
    granted = (lwir.get("permissions") or {}).get("tools") or []
    return sorted(needed_tools(lwir) | {str(name) for name in granted})
