"""What a definition grants its planner: the tools it declares, its model slots and the
widest code.run sandbox it allows (`planner.maxCodeSandbox`, default every setting
`deny`). A draft that asks for more is sent back with a finding per excess (code,
JSON Pointer, the granted names); a version a planner locked is checked again before
it runs, so nothing a model writes gets more than the definition grants.

Codes: `grant.tool` (permissions.tools names a tool the definition does not declare),
`grant.secret` (permissions.secrets names a secret the definition's `secrets` does not),
`grant.network` (a permissions.network pattern none of the definition's `network`
covers),
`grant.model` (permissions.models names a slot the definition does not have: the
planner's own model included), `grant.sandbox` (a code.run step asks for more network,
env or fs than `planner.maxCodeSandbox` allows).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lwtool.authoring.snapshot import slot_id

SANDBOX_LEVELS: dict[str, tuple[str, ...]] = {
    "network": ("deny", "allow"), "env": ("deny", "allow"), "fs": ("deny", "read", "allow")}


@dataclass(frozen=True)
class Grant:
    tools: frozenset[str]
    models: frozenset[str]
    sandbox: dict[str, str]
    secrets: frozenset[str] = frozenset()
    network: tuple[str, ...] = ()

    @classmethod
    def of(cls, definition: dict[str, Any]) -> Grant:
        widest = (definition.get("planner") or {}).get("maxCodeSandbox") or {}
        return cls(frozenset(str(t) for t in definition.get("tools") or ()),
                   frozenset(slot_id(m) for m in definition.get("models") or ()
                             if isinstance(m, dict)),
                   {name: str(widest.get(name, "deny")) for name in SANDBOX_LEVELS},
                   frozenset(str(s) for s in definition.get("secrets") or ()),
                   tuple(str(h) for h in definition.get("network") or ()))

    def as_json(self) -> dict[str, Any]:
        """What the planner is told it may use."""
        return {"tools": sorted(self.tools), "models": sorted(self.models),
                "secrets": sorted(self.secrets), "network": list(self.network),
                "maxCodeSandbox": self.sandbox}


@dataclass(frozen=True)
class Excess:
    code: str
    pointer: str
    message: str
    text: Any


def excesses(lwir: Any, grant: Grant) -> list[Excess]:
    """Everything `lwir` asks for beyond `grant` (none: it stays inside)."""
    if not isinstance(lwir, dict):
        return []
    permissions = lwir.get("permissions")
    found: list[Excess] = []
    if isinstance(permissions, dict):
        found += _names(permissions.get("tools"), grant.tools, "tools", "grant.tool",
                        "tool", "tools the definition declares")
        found += _names(permissions.get("models"), grant.models, "models", "grant.model",
                        "model slot", "the definition's model slots")
        found += _names(permissions.get("secrets"), grant.secrets, "secrets", "grant.secret",
                        "secret", "secrets the definition declares")
        found += _hosts(permissions.get("network"), grant.network)
    found += list(_sandboxes(lwir.get("steps"), "/steps", grant))
    return found


def _names(listed: Any, granted: frozenset[str], field: str, code: str, noun: str,
           whose: str) -> list[Excess]:
    if not isinstance(listed, list):
        return []
    allowed = ", ".join(sorted(granted)) or "none"
    return [Excess(code, f"/permissions/{field}/{index}",
                   f"{noun} '{name}' is not granted by the definition ({whose}: {allowed}); "
                   f"use only those", name)
            for index, name in enumerate(listed) if str(name) not in granted]


def _hosts(listed: Any, granted: tuple[str, ...]) -> list[Excess]:
    from lwtool.validate.invokes import uncovered_hosts

    if not isinstance(listed, list):
        return []
    wider = uncovered_hosts({str(h) for h in listed}, set(granted))
    allowed = ", ".join(granted) or "none"
    return [Excess("grant.network", f"/permissions/network/{index}",
                   f"host pattern '{host}' is not covered by the definition's network "
                   f"({allowed}); use only hosts it allows", host)
            for index, host in enumerate(listed) if str(host) in wider]


def _sandboxes(steps: Any, pointer: str, grant: Grant) -> Iterator[Excess]:
    if not isinstance(steps, list):
        return
    for index, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        here = f"{pointer}/{index}"
        yield from _sandboxes(step.get("steps"), f"{here}/steps", grant)
        settings = step.get("with")
        sandbox = settings.get("sandbox") if isinstance(settings, dict) else None
        if step.get("uses") != "code.run" or not isinstance(sandbox, dict):
            continue
        for name, levels in SANDBOX_LEVELS.items():
            asked, widest = sandbox.get(name, "deny"), grant.sandbox[name]
            if _rank(levels, asked) > _rank(levels, widest):
                yield Excess("grant.sandbox", f"{here}/with/sandbox/{name}",
                             f"sandbox.{name}: {asked} is wider than the definition allows "
                             f"(planner.maxCodeSandbox.{name}: {widest}); use {widest}", asked)


def _rank(levels: tuple[str, ...], value: Any) -> int:
    """A level's width; an unknown value counts as the widest (the validator names it)."""
    return levels.index(value) if value in levels else len(levels)


def describe(found: list[Excess]) -> str:
    """One line for an error: each excess with its pointer."""
    return "; ".join(f"{e.pointer}: {e.message}" for e in found)
