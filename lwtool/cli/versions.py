"""`lwtool version REF`: a WorkflowVersion and what it was registered with: the validator
and its findings, and the capability snapshot (each permitted tool's schema hash, the
model slots; lwtool.lock.version_record)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli.options import WorldOption
from lwtool.cli.run import DataDir
from lwtool.cli.runtime_options import (
    fail,
    open_world,
    postgres_url,
    use_world,
    world_errors,
)
from lwtool.observe.terminal import safe_text


def version(
    ref: Annotated[str, typer.Argument(help="A version id (sha256:..., or 8 or more of its "
                                       "hex digits) or a run id (the version it ran).")],
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="One JSON document: workflowVersionId, name, kind, record "
        "(validator, validation, capabilities, capabilitiesHash, registeredAt; null for a "
        "version registered before versions kept one) and children (the versions its "
        "workflow.invoke steps run).")] = False,
) -> None:
    """Show a WorkflowVersion's record: the validator and its findings, the capability
    snapshot workers verify before they start a queued run, and the child versions its
    workflow.invoke steps run."""
    use_world(world_url)
    world = open_world(data_dir, must_exist=True)
    try:
        with world_errors():
            version_id = _resolve(world, ref)
            lwir = world.get_version(version_id) or {}
            meta = world.version_meta(version_id)
            children = _children(world, lwir)
    finally:
        world.close()
    name = str((lwir.get("metadata") or {}).get("name") or "")
    if as_json:
        typer.echo(json.dumps({"workflowVersionId": version_id, "name": name,
                               "kind": lwir.get("kind", "Workflow"), "record": meta,
                               "children": children}, ensure_ascii=False, indent=2))
        return
    typer.echo(safe_text(f"{version_id}  {name}".rstrip()))
    for line in _described(meta):
        typer.echo(safe_text(line))
    for child in children:
        held = child["name"] if child["held"] else "(not in this world)"
        typer.echo(safe_text(f"child at {child['pointer']}: {child['workflowVersionId']}  "
                             f"{held}".rstrip()))


def _children(world: Any, lwir: dict[str, Any]) -> list[dict[str, Any]]:
    """The versions a version's workflow.invoke steps run: {pointer, workflowVersionId,
    name, held (whether the world holds it)}."""
    from lwtool.validate.invokes import child_ref, child_sites, site_key

    out = []
    for site, holder in child_sites(lwir):
        pointer = site_key(site)
        ref = child_ref(holder)
        if ref is None:
            continue
        child = world.get_version(ref)
        out.append({"pointer": pointer, "workflowVersionId": ref,
                    "name": str(((child or {}).get("metadata") or {}).get("name") or ""),
                    "held": child is not None})
    return out


def _resolve(world: Any, ref: str) -> str:
    """The version id `ref` names: a whole id, a unique hex prefix, or a run's."""
    from lwtool.world.base import RunNotFound

    digits = ref.removeprefix("sha256:")
    if len(digits) >= 8 and all(c in "0123456789abcdef" for c in digits):
        found = [v for v in world.version_ids() if v.removeprefix("sha256:").startswith(digits)]
        if len(found) == 1:
            return str(found[0])
        if len(found) > 1:
            raise fail(f"{ref} names {len(found)} versions; give more of its digits")
    try:
        return str(world.get_run(ref).version_id)
    except RunNotFound:
        queued = _queued_version(world, ref)
        if queued is None:
            raise fail(f"no version or run {ref} in the world (see `lwtool runs`)") from None
        return queued


def _queued_version(world: Any, run_id: str) -> str | None:
    """The version of a run still on a PostgreSQL world's queue (not started yet)."""
    if postgres_url() is None:  # a local world has no queue
        return None
    from lwtool.world.postgres_queue import RunQueue

    return RunQueue(world).version_of(run_id)


def _described(meta: dict[str, Any] | None) -> list[str]:
    if meta is None:
        return ["  no record: registered before versions kept their validation and "
                "capability snapshot"]
    validation = meta.get("validation") or {}
    findings = validation.get("findings") or []
    capabilities = meta.get("capabilities") or {}
    lines = [f"  validated by {meta.get('validator')}: "
             f"{'valid' if validation.get('ok') else 'not valid'}, {len(findings)} finding(s)"]
    lines += [f"    {f.get('severity')} {f.get('code')} at {f.get('pointer') or '/'}: "
              f"{f.get('message')}" for f in findings]
    lines.append(f"  capability snapshot {meta.get('capabilitiesHash')}")
    lines += [f"    tool {name}: {pin or 'not pinned (registered without tools)'}"
              for name, pin in sorted((capabilities.get("tools") or {}).items())]
    if not capabilities.get("tools"):
        lines.append("    tools: none permitted")
    slots = capabilities.get("models") or []
    lines.append(f"    model slots: {', '.join(slots) if slots else 'none'}")
    return lines
