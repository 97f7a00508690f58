"""What the web inspector's pages show, read from the world (never written): plain
dicts for the templates. A step attempt's page is lwtool.ui.attempt; the HTTP side is
lwtool.ui.app."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from lwtool.observe.timeline import Attempt, Call, Timeline, top_step_ids
from lwtool.orchestrate.subruns import sub_run_states
from lwtool.record.maps import map_summaries
from lwtool.record.names import run_name
from lwtool.record.rollup import child_run_states
from lwtool.ui.text import money, pretty, preview, short, span, stamp
from lwtool.world.base import Event, RunRecord, shown_status

RUNS_PER_PAGE = 100
EVENTS_PER_PAGE = 200
ATTEMPTS_PER_PAGE = 200
ARTIFACT_PAGE = 64 * 1024
MAX_LANES = 200
MAX_RUNNING = 10_000  # runs marked running the filters look at (each asked if it is live)


# -- liveness ----------------------------------------------------------------------------

# -- runs --------------------------------------------------------------------------------

def runs_page(world: Any, status: str, text: str, page: int) -> dict[str, Any]:
    from lwtool.record.report import add_usage, empty_totals, reply_usage

    wanted = status if status in ("running", "interrupted", "waiting", "completed",
                                  "failed") else ""
    counts = world.status_counts()
    # marked running, but no process executes them: counted and filtered on their own
    marked = world.runs_page("running", None, 0, MAX_RUNNING)[1] if counts.get("running") \
        else []
    stopped = {r.run_id for r in marked if not world.executing(r.run_id)}
    looked_at = {r.run_id for r in marked}
    if stopped:
        counts = {**counts, "running": counts["running"] - len(stopped),
                  "interrupted": len(stopped)}
    if wanted in ("running", "interrupted"):
        if text:
            marked = world.runs_page("running", text, 0, MAX_RUNNING)[1]
        chosen = [r for r in marked if (r.run_id in stopped) == (wanted == "interrupted")]
        total = len(chosen)
        records = chosen[page * RUNS_PER_PAGE:(page + 1) * RUNS_PER_PAGE]
    else:
        total, records = world.runs_page(wanted or None, text or None,
                                         page * RUNS_PER_PAGE, RUNS_PER_PAGE)
    replies = world.model_replies([r.run_id for r in records])
    now = time.time()
    rows = []
    for record in records:
        usage = empty_totals()
        for payload in replies.get(record.run_id, []):
            add_usage(usage, *reply_usage(payload))
        calls = usage["pricedCalls"] + usage["unpricedCalls"]
        shown = ("interrupted" if record.run_id in stopped else record.status) \
            if record.run_id in looked_at else shown_status(world, record.run_id, record.status)
        end = now if shown == "running" else record.updated_at
        rows.append({"id": record.run_id, "status": shown, "version": record.version_id,
                     "short": short(record.version_id), "started": stamp(record.created_at),
                     "duration": span(end - record.created_at),
                     "tokens": usage["inputTokens"] + usage["outputTokens"],
                     "cost": money(usage["costUsd"], calls)})
    pages = max(1, -(-total // RUNS_PER_PAGE))
    return {"rows": _grouped(world, records, rows), "total": total, "page": page,
            "pages": pages, "status": wanted, "text": text, "counts": counts}


def _grouped(world: Any, records: list[RunRecord], rows: list[dict[str, Any]]
             ) -> list[dict[str, Any]]:
    """The page's rows named (a pipeline's id, a workflow's name), each sub-run right
    under its parent when both are on the page (`child`: drawn indented)."""
    from lwtool.world.base import WorldError

    versions: dict[str, Any] = {}
    for record, row in zip(records, rows, strict=True):
        try:  # the page's records come without options (a damaged one still lists)
            whole = world.get_run(record.run_id)
            if record.version_id not in versions:
                versions[record.version_id] = world.get_version(record.version_id) or {}
        except WorldError:
            row["name"], row["parent"] = "?", ""
            continue
        row["name"] = run_name(versions[record.version_id], whole.options.get("name"))
        row["parent"] = whole.parent_run_id or ""
    on_page = {row["id"] for row in rows}
    children: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row["parent"] in on_page:
            children.setdefault(row["parent"], []).append(row)
    ordered: list[dict[str, Any]] = []
    for row in rows:
        if row["parent"] not in on_page:
            ordered.append(row)
            ordered.extend({**child, "child": True} for child in children.get(row["id"], []))
    return ordered


# -- one run -----------------------------------------------------------------------------

@dataclass
class Lane:
    name: str
    bars: list[dict[str, Any]]


def run_page(world: Any, record: RunRecord, events: list[Event], types: list[str],
             offset: int, first_attempt: int = 0) -> dict[str, Any]:
    """The run page: header, graph, timeline lanes, a page of attempts (from
    `first_attempt`), a page of events (from `offset`, of `types` when given)."""
    from lwtool.ui.layout import svg

    timeline = Timeline.of(record.run_id, events)
    status = shown_status(world, record.run_id, record.status)
    now = time.time()
    start = timeline.started if timeline.started is not None else record.created_at
    end = timeline.ended if timeline.ended is not None else (
        now if status == "running" else max((e.at for e in events), default=start))
    version = world.get_version(record.version_id) or {}
    graph, pointer_of = _graph(version, events)
    attempts = [_attempt_row(record.run_id, index, a, start, end)
                for index, a in enumerate(timeline.attempts)]
    links: dict[str, str] = {}  # a node opens its step's latest attempt
    for row, attempt in zip(attempts, timeline.attempts, strict=True):
        links[pointer_of(attempt)] = row["href"]
    lanes = _lanes(attempts, start, max(end - start, 1e-6))
    counts = dict(sorted(Counter(e.type for e in events).items()))
    chosen = [t for t in types if t in counts]
    selected = [e for e in events if not chosen or e.type in chosen]
    page = selected[offset: offset + EVENTS_PER_PAGE]
    failure = timeline.failure
    return {
        "run": {"id": record.run_id, "status": status, "version": record.version_id,
                "short": short(record.version_id),
                "name": run_name(version, (record.options or {}).get("name")),
                "started": stamp(start), "duration": span(end - start),
                **dict(zip(("done", "known"), timeline.counts(top_step_ids(version)),
                           strict=True)),
                "attempts": len(timeline.attempts),
                "input_tokens": timeline.usage["inputTokens"],
                "output_tokens": timeline.usage["outputTokens"],
                "cost": money(timeline.cost_usd, timeline.priced_calls
                              + timeline.unpriced_calls),
                "failure": failure, "input": preview(record.input, 400),
                "waiting_for": _waiting_for(events) if status in ("waiting", "running")
                else [],
                "parent": record.parent_run_id or "",
                "sub_runs": sub_run_states(world, record.run_id)
                + child_run_states(world, record.run_id),
                "maps": map_summaries(events)},
        "graph": svg(graph, links) if graph is not None else "",
        "lanes": lanes[:MAX_LANES], "hidden_lanes": max(0, len(lanes) - MAX_LANES),
        "calls": [_call_row(call) for call in timeline.loose_calls()],
        "attempts": attempts[first_attempt: first_attempt + ATTEMPTS_PER_PAGE],
        "first_attempt": first_attempt, "attempts_per_page": ATTEMPTS_PER_PAGE,
        "events": [{"seq": e.seq, "type": e.type, "path": e.step_path or "",
                    "at": f"+{span(max(0.0, e.at - start))}", "payload": preview(e.payload)}
                   for e in page],
        "types": counts, "chosen": chosen, "offset": offset, "shown": len(page),
        "selected": len(selected), "per_page": EVENTS_PER_PAGE,
    }


def _waiting_for(events: list[Event]) -> list[dict[str, Any]]:
    """A waiting or executing run's open human.input requests: {path, prompt, schema
    (text)}; an executing run takes an answer as it goes on."""
    from lwtool.steps.human_input import open_requests

    return [{"path": r["stepPath"], "prompt": r["prompt"], "schema": preview(r["schema"], 400)}
            for r in open_requests(events)]


def _graph(version: dict[str, Any], events: list[Event]) -> tuple[Any, Any]:
    """The run's graph with step states, and attempt -> the pointer of its step."""
    from lwtool.graph import build, pointer_finder, with_run
    from lwtool.source.loader import load_text
    from lwtool.validate.context import Context

    if not version.get("steps"):
        return None, lambda attempt: ""
    document = load_text(json.dumps(version), "version.json")
    graph = with_run(build(Context(document, "Workflow")), events)
    find = pointer_finder(graph)

    def pointer_of(attempt: Attempt) -> str:
        return find(attempt.path) or ""

    return graph, pointer_of


def attempt_href(run_id: str, path: str, attempt: int) -> str:
    return f"/runs/{quote(run_id)}/step?path={quote(path)}&attempt={attempt}"


def _attempt_row(run_id: str, index: int, attempt: Attempt, start: float, end: float
                 ) -> dict[str, Any]:
    """An attempt as a row; one still open is drawn up to `end` (now, while the run
    runs)."""
    ended = attempt.ended if attempt.ended is not None else end
    tokens = sum(c.usage.get("inputTokens", 0) + c.usage.get("outputTokens", 0)
                 for c in attempt.calls)
    priced = [c.cost_usd for c in attempt.calls if c.cost_usd is not None]
    models = sum(1 for c in attempt.calls if c.kind == "model")
    where = attempt.branch
    return {"index": index, "href": attempt_href(run_id, attempt.path, attempt.attempt),
            "path": attempt.path, "uses": attempt.uses,
            "attempt": attempt.attempt, "status": attempt.status,
            "offset": max(0.0, attempt.started - start),
            "length": max(0.0, ended - attempt.started),
            "at": f"+{span(max(0.0, attempt.started - start))}",
            "duration": span(max(0.0, ended - attempt.started)), "tokens": tokens,
            "cost": money(sum(priced) if priced else None, models),
            "calls": len(attempt.calls),
            "lane": f"{where[0]}[{where[1]}]" if where else "run"}


def _call_row(call: Call) -> dict[str, Any]:
    return {"seq": call.seq, "id": call.call_id, "kind": call.kind, "sub_run": call.sub_run,
            "name": call.name or call.request_model, "status": call.status,
            "error": call.error, "duration": span((call.ended or call.started) - call.started),
            "tokens": call.usage.get("inputTokens", 0) + call.usage.get("outputTokens", 0),
            "cost": money(call.cost_usd, 1) if call.kind == "model" else ""}


def _lanes(attempts: list[dict[str, Any]], start: float, total: float) -> list[Lane]:
    """One lane for the top-level steps, one per parallel branch, in order of first
    appearance; bars placed in percent of the run's span."""
    lanes: dict[str, Lane] = {}
    for row in attempts:
        lane = lanes.setdefault(row["lane"], Lane(row["lane"], []))
        left = min(100.0, row["offset"] / total * 100)
        width = max(0.25, min(100.0 - left, row["length"] / total * 100))
        lane.bars.append({"href": row["href"], "status": row["status"], "left": f"{left:.3f}",
                          "width": f"{width:.3f}",
                          "title": f"{row['path']} · {row['uses']} · {row['status']} · "
                                   f"{row['at']} · {row['duration']}"})
    return list(lanes.values())


def event_page(record: RunRecord, events: list[Event], seq: int) -> dict[str, Any] | None:
    event = next((e for e in events if e.seq == seq), None)
    if event is None:
        return None
    return {"run": {"id": record.run_id}, "seq": seq, "type": event.type,
            "path": event.step_path or "", "at": stamp(event.at),
            "payload": pretty(event.payload), "last": events[-1].seq if events else 0}


# -- versions and artifacts --------------------------------------------------------------

def version_page(world: Any, version_id: str, lwir: dict[str, Any]) -> dict[str, Any]:
    from lwtool.canonical.digest import workflow_version_id
    from lwtool.lock.model import lock_for

    workflow = lwir.get("kind") == "Workflow"
    name = str((lwir.get("metadata") or {}).get("name") or lwir.get("kind") or "subject")
    recomputed = workflow_version_id(lwir)
    lock = lock_for(f"{name}.lwir.yaml", "Workflow", lwir).as_json() if workflow else None
    total, records = world.runs_page(None, version_id, 0, 20)
    return {"id": version_id, "name": name, "recomputed": recomputed,
            "record": _record(world.version_meta(version_id)),
            "verified": recomputed == version_id, "lwir": _written(lwir), "workflow": workflow,
            "lock": pretty(lock) if lock else "",
            "runs": [{"id": r.run_id, "status": shown_status(world, r.run_id, r.status),
                      "started": stamp(r.created_at)} for r in records], "total": total}


def _record(meta: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the version page shows of a version's record (lwtool.lock.version_record)."""
    if meta is None:
        return None
    validation = meta.get("validation") or {}
    capabilities = meta.get("capabilities") or {}
    return {"validator": meta.get("validator"), "ok": validation.get("ok"),
            "findings": validation.get("findings") or [],
            "hash": meta.get("capabilitiesHash"),
            "registered": stamp(float(meta.get("registeredAt") or 0)),
            "tools": sorted((capabilities.get("tools") or {}).items()),
            "models": capabilities.get("models") or []}


def _written(lwir: dict[str, Any]) -> str:
    """The version as a person writes LWIR (the spec's key order, block style, prompts as
    literal blocks: lwtool.planner.emit), not in its canonical (sorted) key order; the
    world keeps only the canonical form, so this is the nearest to the file written."""
    from lwtool.planner.emit import lwir_yaml

    try:
        return lwir_yaml(lwir)
    except Exception:  # noqa: BLE001 - any value the emitter cannot lay out: plain YAML
        return _yaml(lwir)


def _yaml(value: Any) -> str:
    import io

    from ruamel.yaml import YAML

    out = io.StringIO()
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 100
    yaml.dump(value, out)
    return out.getvalue()


def artifact_page(world: Any, ref: str, offset: int) -> dict[str, Any]:
    """A page of an artifact; a sensitive step's (sealed) shows a placeholder only."""
    from lwtool.record.sensitive import MAGIC, PLACEHOLDER, sealed

    head, size, _ = world.artifact_slice(ref, 0, len(MAGIC))
    if sealed(head):
        return {"ref": ref, "size": size, "offset": 0, "end": 0, "text": PLACEHOLDER,
                "whole": True, "page": ARTIFACT_PAGE, "prev": None, "next": None}
    data, size, whole = world.artifact_slice(ref, offset, ARTIFACT_PAGE)
    text = data.decode("utf-8", errors="replace")
    if whole:
        try:
            text = pretty(json.loads(text))
        except ValueError:
            pass
    return {"ref": ref, "size": size, "offset": offset, "end": offset + len(data),
            "text": text, "whole": whole, "page": ARTIFACT_PAGE,
            "prev": max(0, offset - ARTIFACT_PAGE) if offset > 0 else None,
            "next": offset + len(data) if offset + len(data) < size else None}
