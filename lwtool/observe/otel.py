"""A run's events as OpenTelemetry traces (opentelemetry-sdk): one trace per run, a span
for the run, each parallel group, each branch, each step attempt and each model and
tool call (a child run of a workflow.invoke, and a pipeline's sub-run, nest in the same
trace under the span of the step or call that started them), with the GenAI semantic
conventions on model and tool calls (operation, provider, models, token usage, tool
name and call id) and `lwtool.cost_usd` where a call is priced. Sent as OTLP over
HTTP, or written as OTLP JSON.

Ids are derived from the run id and each span's place in the run, so exporting a run
twice gives the same trace and span ids (a collector deduplicates, links stay valid).
Only the run's committed events are read; a run that is still going (or was killed)
ends its open spans at its last event, with `lwtool.status` = running. An attempt a
resume started again (its process died) ends at its last event with status ERROR
"interrupted" (`lwtool.status` = interrupted), as do its calls that had not ended.

Each span also carries `openinference.span.kind` (CHAIN for the run, groups, branches
and steps, AGENT for an ai.agent step, LLM for a model call, TOOL for a tool call), the
attribute Phoenix and other OpenInference viewers classify spans by.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from lwtool._version import __version__
from lwtool.observe.timeline import Attempt, Call, Timeline
from lwtool.record.ids import child_run_id
from lwtool.record.maps import map_summaries
from lwtool.record.names import run_name
from lwtool.world.base import Event

SCOPE = InstrumentationScope("lwtool", __version__)
SPAN_KIND = "openinference.span.kind"  # OpenInference's span kind (Phoenix)
INTERRUPTED = "interrupted (its process died; a resume started it again)"


class _Ids:
    """Deterministic trace and span ids of one run (in the trace of `trace_run`: a
    sub-run's spans belong to its pipeline run's trace)."""

    def __init__(self, run_id: str, trace_run: str | None = None) -> None:
        self.run_id = run_id
        self.trace_id = int(hashlib.sha256(f"trace:{trace_run or run_id}".encode())
                            .hexdigest()[:32], 16)

    def context(self, key: str) -> SpanContext:
        digest = hashlib.sha256(f"span:{self.run_id}:{key}".encode()).hexdigest()
        return SpanContext(self.trace_id, int(digest[:16], 16) or 1, is_remote=False,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _ns(at: float) -> int:
    return int(round(at * 1_000_000_000))


SubRunReader = Callable[[str], tuple[list[Event], dict[str, Any] | None]]


def spans(run_id: str, events: list[Event], version: dict[str, Any] | None = None,
          sub_runs: SubRunReader | None = None, parent: SpanContext | None = None,
          trace_run: str | None = None) -> list[ReadableSpan]:
    """The spans of one run, parents before children. With `sub_runs` (run id -> its
    events and version), a pipeline run's sub-runs follow, each in the same trace under
    the span of the tool call that started it."""
    timeline = Timeline.of(run_id, events)
    ids = _Ids(run_id, trace_run)
    last = events[-1].at if events else 0.0
    started = next((e.payload for e in events if e.type == "RunStarted"), {})
    name = run_name(version, started.get("name"))
    resource = Resource.create({"service.name": "lwtool", "service.version": __version__})
    out: list[ReadableSpan] = []

    def span(key: str, title: str, parent: SpanContext | None, start: float,
             end: float | None, attributes: dict[str, Any], failed: str = "",
             kind: SpanKind = SpanKind.INTERNAL) -> SpanContext:
        context = ids.context(key)
        status = Status(StatusCode.ERROR, failed) if failed else Status(StatusCode.UNSET)
        if failed:  # the conventions' error.type: the cause code, else a generic class
            attributes = {ERROR_TYPE: attributes.get("lwtool.failure.cause") or "_OTHER",
                          **attributes}
        attributes = {SPAN_KIND: "LLM" if kind == SpanKind.CLIENT else "CHAIN", **attributes}
        out.append(ReadableSpan(
            title, context, parent, resource,
            {k: _clamped(v) for k, v in attributes.items() if v is not None and v != ""},
            kind=kind, status=status, start_time=_ns(start),
            end_time=_ns(end if end is not None else max(last, start)),
            instrumentation_scope=SCOPE))
        return context

    failure = timeline.failure
    root = span("run", f"{gen_ai.GenAiOperationNameValues.INVOKE_WORKFLOW.value} {name}", parent,
                timeline.started if timeline.started is not None else last, timeline.ended, {
                    gen_ai.GEN_AI_OPERATION_NAME:
                        gen_ai.GenAiOperationNameValues.INVOKE_WORKFLOW.value,
                    gen_ai.GEN_AI_WORKFLOW_NAME: name,
                    "lwtool.run.id": run_id, "lwtool.workflow.name": name,
                    "lwtool.workflow.version_id": timeline.version_id,
                    "lwtool.status": timeline.status,
                    gen_ai.GEN_AI_USAGE_INPUT_TOKENS: timeline.usage["inputTokens"],
                    gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: timeline.usage["outputTokens"],
                    "lwtool.cost_usd": timeline.cost_usd,
                    "lwtool.failure.cause": failure.get("causeCode"),
                    "lwtool.failure.step_path": failure.get("failedStepPath")},
                failed=str(failure.get("message") or failure.get("causeCode") or "")
                if timeline.status == "failed" else "")

    groups: dict[str, SpanContext] = {}  # group attempt path -> its span
    invoked: dict[str, SpanContext] = {}  # workflow.invoke path -> its last attempt's span
    branches: dict[tuple[str, str], SpanContext] = {}
    extents = _branch_extents(timeline.attempts)
    maps = {summary["step"]: summary for summary in map_summaries(events)}
    for attempt in timeline.attempts:  # in commit order: a group opens before its steps
        parent = root
        where = attempt.branch
        if where is not None and where[0] in groups:
            parent = branches.get(where) or _branch_span(span, groups[where[0]], where,
                                                         extents[where], branches)
        key = f"step:{attempt.path}#{attempt.attempt}"
        attributes = _attempt_attributes(attempt)
        if attempt.path in maps:  # a map: its shards counted, and each shard's run
            attributes.update(_map_attributes(maps[attempt.path]))
        if attempt.tool:  # a tool.call step: the step is the tool call
            attributes[gen_ai.GEN_AI_OPERATION_NAME] = \
                gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
            attributes[gen_ai.GEN_AI_TOOL_NAME] = attempt.tool
        # GenAI conventions: a tool execution is `execute_tool <tool name>`
        title = f"{gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value} {attempt.tool}" \
            if attempt.tool else f"{attempt.uses} {attempt.path}"
        if attempt.tool:
            attributes[SPAN_KIND] = "TOOL"
        elif attempt.uses == "ai.agent":  # `invoke_agent <name>`: its turns and tools below
            operation = gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value
            attributes.update({gen_ai.GEN_AI_OPERATION_NAME: operation,
                               gen_ai.GEN_AI_AGENT_NAME: attempt.step_id, SPAN_KIND: "AGENT"})
            title = f"{operation} {attempt.step_id}"
        context = span(key, title, parent, attempt.started,
                       attempt.ended, attributes, failed=_failed(attempt))
        if attempt.uses == "parallel":
            groups[attempt.path] = context
        elif attempt.uses == "workflow.invoke":  # its child run nests under its last one
            invoked[attempt.path] = context
        for call in attempt.calls:
            _call_span(span, call, context)
    for path, context in invoked.items():
        child = child_run_id(run_id, path)
        if sub_runs is not None and (found := sub_runs(child))[0]:
            out += spans(child, found[0], found[1], sub_runs, context, trace_run or run_id)
    for call in timeline.loose_calls():  # outside any step attempt (a session's turns)
        context = _call_span(span, call, root)
        if call.sub_run and sub_runs is not None:
            sub_events, sub_version = sub_runs(call.sub_run)
            if sub_events:
                out += spans(call.sub_run, sub_events, sub_version, sub_runs, context,
                             trace_run or run_id)
    return out


INT64 = (-(1 << 63), (1 << 63) - 1)


def run_spans(world: Any, run_id: str) -> list[ReadableSpan]:
    """The spans of a run of `world`, its sub-runs' included (what `lwtool export-otel`
    and `lwtool worker --otel-endpoint` send)."""
    record = world.get_run(run_id)
    return spans(run_id, world.events(run_id), world.get_version(record.version_id),
                 lambda child: sub_run_of(world, child))


def sub_run_of(world: Any, child: str) -> tuple[list[Event], dict[str, Any] | None]:
    """A sub-run's events and version ([] for one its call reserved but never made)."""
    from lwtool.world.base import find_run

    record = find_run(world, child)
    if record is None:
        return [], None
    return world.events(child), world.get_version(record.version_id)


def _clamped(value: Any) -> Any:
    """An integer attribute within OTLP's int64 (a provider may report any count)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return min(max(value, INT64[0]), INT64[1])
    return value


def _branch_extents(attempts: Sequence[Attempt]) -> dict[tuple[str, str], tuple[float, float
                                                                               | None]]:
    """(group, key) -> (first start, last end or None while a step runs)."""
    out: dict[tuple[str, str], tuple[float, float | None]] = {}
    for attempt in attempts:
        where = attempt.branch
        if where is None:
            continue
        start, end = out.get(where, (attempt.started, attempt.ended))
        start = min(start, attempt.started)
        end = None if end is None or attempt.ended is None else max(end, attempt.ended)
        out[where] = (start, end)
    return out


def _branch_span(span: Any, group: SpanContext, where: tuple[str, str],
                 extent: tuple[float, float | None],
                 branches: dict[tuple[str, str], SpanContext]) -> SpanContext:
    branches[where] = span(f"branch:{where[0]}[{where[1]}]", f"branch {where[0]}[{where[1]}]",
                           group, extent[0], extent[1],
                           {"lwtool.parallel.group": where[0], "lwtool.parallel.item_key":
                            where[1]})
    return branches[where]


def _attempt_attributes(attempt: Attempt) -> dict[str, Any]:
    return {"lwtool.step.path": attempt.path, "lwtool.step.id": attempt.step_id,
            "lwtool.step.uses": attempt.uses, "lwtool.step.attempt": attempt.attempt,
            "lwtool.status": attempt.status, "lwtool.failure.cause": attempt.cause,
            "lwtool.step.output_ref": attempt.output_ref}


def _map_attributes(summary: dict[str, Any]) -> dict[str, Any]:
    """A map step's span: shard counts by status, items, and each shard's run id."""
    return {"lwtool.map.shards": summary["total"], "lwtool.map.items": summary["items"],
            **{f"lwtool.map.shards.{status}": n for status, n in summary["shards"].items()},
            "lwtool.map.shard_run_ids": [run["runId"] for run in summary["runs"]]}


def _failed(item: Attempt | Call) -> str:
    """A span's error status message ("" for none): a failure, or an interruption."""
    if item.status == "interrupted":
        return INTERRUPTED
    if item.status != "failed":
        return ""
    return item.error or (item.cause if isinstance(item, Attempt) else "") or "failed"


def _call_span(span: Callable[..., SpanContext], call: Call,
               parent: SpanContext) -> SpanContext:
    failed = _failed(call)
    if call.kind == "tool":
        operation = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
        return span(f"call:{call.call_id}", f"{operation} {call.name}", parent,
                    call.started, call.ended, {
                        SPAN_KIND: "TOOL", gen_ai.GEN_AI_OPERATION_NAME: operation,
                        gen_ai.GEN_AI_TOOL_NAME: call.name,
                        gen_ai.GEN_AI_TOOL_CALL_ID: call.call_id,
                        "lwtool.tool.caller": call.caller, "lwtool.status": call.status,
                        "lwtool.sub_run.id": call.sub_run}, failed=failed)
    operation = gen_ai.GenAiOperationNameValues.CHAT.value
    return span(f"call:{call.call_id}", f"{operation} {call.model_id or call.request_model}",
                parent, call.started, call.ended, {
                    gen_ai.GEN_AI_OPERATION_NAME: operation,
                    gen_ai.GEN_AI_PROVIDER_NAME: call.provider,
                    gen_ai.GEN_AI_REQUEST_MODEL: call.request_model,
                    gen_ai.GEN_AI_RESPONSE_MODEL: call.model_id,
                    gen_ai.GEN_AI_USAGE_INPUT_TOKENS: call.usage.get("inputTokens"),
                    gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: call.usage.get("outputTokens"),
                    gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS:
                        call.usage.get("cachedInputTokens"),
                    gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS:
                        call.usage.get("reasoningTokens"),
                    "lwtool.cost_usd": call.cost_usd, "lwtool.call.id": call.call_id,
                    "lwtool.status": call.status},
                failed=failed, kind=SpanKind.CLIENT)


# -- sinks -----------------------------------------------------------------------------

def traces_url(endpoint: str) -> str:
    """A collector's base URL (`http://host:4318`) gets OTLP's `/v1/traces`; a URL with
    a path is used as given."""
    from urllib.parse import urlsplit

    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        from lwtool.observe.otlp_send import ExportFailed

        raise ExportFailed(f"--endpoint must be an http(s) URL, not {endpoint!r}")
    return endpoint.rstrip("/") + "/v1/traces" if parts.path in ("", "/") else endpoint


def send(found: list[ReadableSpan], endpoint: str | None, timeout: float) -> str:
    """POST the spans as OTLP/HTTP protobuf; returns the URL they went to. The whole
    exchange is bounded by `timeout` (lwtool.observe.otlp_send)."""
    from lwtool.observe.otlp_send import post_spans

    return post_spans(found, traces_url(endpoint) if endpoint else None, timeout)


def otlp_json(found: list[ReadableSpan]) -> dict[str, Any]:
    """The spans as an OTLP/JSON ExportTraceServiceRequest (ids in hex, enums as
    integers, per the OTLP JSON encoding)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    document: dict[str, Any] = MessageToDict(encode_spans(found), use_integers_for_enums=True)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for item in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in item:
                        item[key] = base64.b64decode(item[key]).hex()
    return document


def write(found: list[ReadableSpan], path: Path) -> None:
    path.write_text(json.dumps(otlp_json(found), indent=1) + "\n", encoding="utf-8")
