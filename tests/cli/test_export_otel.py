"""`lwtool export-otel`: a run's spans sent to a loopback OTLP/HTTP receiver (protobuf,
parsed back with the OTLP protos) or written as OTLP JSON; the span tree, the GenAI
attributes, failures, a killed run, and the refusals."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from lwtool import local_world, run_workflow
from tests.coderun.helpers import code_step, workflow
from tests.coderun.test_code_run_step import CALLS
from tests.conftest import ROOT, run_cli
from tests.fixtures.otlp_receiver import otlp_receiver
from tests.fixtures.session_run import harness_session_run
from tests.fixtures.two_steps import killed_two_steps

WORKFLOWS = ROOT / "tests" / "runtime" / "workflows"
TOOLS = f"{ROOT / 'tests' / 'runtime' / 'side_effects.py'}:tools"
ERROR = 2  # opentelemetry.proto.trace.v1.Status.STATUS_CODE_ERROR


def _review(data: Path) -> None:
    result = run_cli("run", "examples/candidate-review.lwir.yaml", "--input",
                     "examples/inputs/candidate-review.json", "--models",
                     "examples/models.offline.yaml", "--data-dir", str(data), "--run-id", "rev")
    assert result.returncode == 0, result.stderr


def _attributes(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in span.attributes:
        value = item.value
        out[item.key] = getattr(value, value.WhichOneof("value"))
    return out


def _exported(run_id: str, data: Path) -> list[Any]:
    """The spans `lwtool export-otel RUN` sends a loopback receiver (the export succeeds)."""
    with otlp_receiver() as receiver:
        result = run_cli("export-otel", run_id, "--data-dir", str(data), "--endpoint",
                         receiver.url)
        assert result.returncode == 0, result.stderr
        return list(receiver.spans())


def _fanout(tmp_path: Path, workflow: str, items: list[dict[str, Any]], run_id: str,
            **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "items.json").write_text(json.dumps({"items": items}))
    return subprocess.run(
        [sys.executable, "-m", "lwtool", "run", str(WORKFLOWS / workflow), "--input",
         str(tmp_path / "items.json"), "--tools", TOOLS, "--data-dir", str(tmp_path / "data"),
         "--run-id", run_id], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "LWTOOL_TEST_DIR": str(tmp_path), **env})


def test_a_run_reaches_an_otlp_receiver_as_one_span_tree(tmp_path: Path) -> None:
    _review(tmp_path)
    with otlp_receiver() as receiver:
        result = run_cli("export-otel", "rev", "--data-dir", str(tmp_path), "--endpoint",
                         receiver.url)
        assert result.returncode == 0, result.stderr
        assert result.stderr == (f"lwtool: exported 20 spans of run rev to "
                                 f"{receiver.url}/v1/traces\n")
        assert receiver.paths == ["/v1/traces"]
        assert receiver.content_types == ["application/x-protobuf"]
        spans = receiver.spans()
        resource = receiver.requests[0].resource_spans[0].resource
        first = {s.span_id: s for s in spans}
        again = run_cli("export-otel", "rev", "--data-dir", str(tmp_path), "--endpoint",
                        f"{receiver.url}/v1/traces")
        assert again.returncode == 0, again.stderr
        assert {s.span_id for s in receiver.spans()[len(spans):]} == set(first)  # same ids
    service = {a.key: a.value.string_value for a in resource.attributes}
    assert service["service.name"] == "lwtool"
    assert len({s.trace_id for s in spans}) == 1
    names = Counter(s.name.split(" ")[0] for s in spans)
    assert names == {"invoke_workflow": 1, "parallel": 1, "branch": 3, "ai.generate": 6,
                     "decision": 3, "chat": 6}
    root = next(s for s in spans if not s.parent_span_id)
    assert root.name == "invoke_workflow candidate-review"
    for span in spans:  # every parent is in the trace, and holds its children in time
        if span.parent_span_id:
            parent = first[span.parent_span_id]
            assert parent.start_time_unix_nano <= span.start_time_unix_nano
            assert span.end_time_unix_nano <= parent.end_time_unix_nano + 1_000
    by_name = {s.name: s for s in spans}
    worker = by_name["ai.generate review-cands[cand_002].worker.visit[0]"]
    assert first[worker.parent_span_id].name == "branch review-cands[cand_002]"
    assert first[first[worker.parent_span_id].parent_span_id].name == "parallel review-cands"
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert all(first[c.parent_span_id].name.startswith("ai.generate ") for c in chats)
    chat = _attributes(chats[0])
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.provider.name"] == "lwtool"
    assert chat["gen_ai.request.model"] == chat["gen_ai.response.model"] == "offline"
    assert chats[0].kind == 3  # SPAN_KIND_CLIENT
    report = json.loads(run_cli("report", "rev", "--data-dir", str(tmp_path), "--json").stdout)
    assert sum(_attributes(c)["gen_ai.usage.input_tokens"] for c in chats) == \
        report["run"]["inputTokens"]
    run = _attributes(root)
    assert run["gen_ai.usage.output_tokens"] == report["run"]["outputTokens"]
    assert run["lwtool.status"] == "completed" and "lwtool.cost_usd" not in run  # unpriced
    kinds = {s.name.split(" ")[0]: _attributes(s)["openinference.span.kind"] for s in spans}
    assert kinds == {"invoke_workflow": "CHAIN", "parallel": "CHAIN", "branch": "CHAIN",
                     "ai.generate": "CHAIN", "decision": "CHAIN", "chat": "LLM"}  # Phoenix


def test_otlp_json_to_a_file(tmp_path: Path) -> None:
    _review(tmp_path)
    out = tmp_path / "trace.json"
    result = run_cli("export-otel", "rev", "--data-dir", str(tmp_path), "--file", str(out))
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert document["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"] == "lwtool"
    assert len(spans) == 20
    for span in spans:  # OTLP JSON: ids in hex, enums as integers
        assert len(span["traceId"]) == 32 and int(span["traceId"], 16)
        assert len(span["spanId"]) == 16 and int(span["spanId"], 16)
        assert isinstance(span["kind"], int)
    parents = {s["spanId"] for s in spans}
    assert all(s.get("parentSpanId", spans[0]["spanId"]) in parents for s in spans)


def test_failures_are_error_spans_and_tool_calls_are_execute_tool(tmp_path: Path) -> None:
    items = [{"id": "a", "n": 1}, {"id": "b", "n": 2, "fail": True}]
    ran = _fanout(tmp_path, "fanout.lwir.yaml", items, "broken")
    assert ran.returncode == 1, ran.stderr
    spans = _exported("broken", tmp_path / "data")
    root = next(s for s in spans if not s.parent_span_id)
    assert root.status.code == ERROR and _attributes(root)["lwtool.status"] == "failed"
    assert _attributes(root)["lwtool.failure.cause"] == "step_failed"
    def at(path: str) -> Any:
        return next(s for s in spans if _attributes(s).get("lwtool.step.path") == path)

    step = at("each[b].work")
    assert step.name == "execute_tool work"  # GenAI conventions: execute_tool <tool>
    assert _attributes(step)["error.type"] == "step_failed"
    assert _attributes(root)["error.type"] == "step_failed"
    assert _attributes(root)["gen_ai.workflow.name"] == "fanout"
    assert step.status.code == ERROR and "item b is broken" in step.status.message
    attributes = _attributes(step)
    assert attributes["gen_ai.operation.name"] == "execute_tool"  # the step is the call
    assert attributes["gen_ai.tool.name"] == "work"
    assert attributes["lwtool.status"] == "failed"
    assert attributes["lwtool.failure.cause"] == "step_failed"
    done = _attributes(at("each[a].work"))
    assert done["lwtool.status"] == "done" and done["gen_ai.tool.name"] == "work"
    assert "error.type" not in done


def test_tool_calls_made_by_code_are_execute_tool_spans(tmp_path: Path) -> None:
    world = local_world(tmp_path)
    doc = workflow(code_step("c", CALLS), tools=["lookup", "nothere"])
    asyncio.run(run_workflow(doc, {"key": "ab"}, world=world, run_id="code",
                             tools={"lookup": lambda a: {"value": str(a["key"]).upper()}}))
    world.close()
    spans = _exported("code", tmp_path)
    step = next(s for s in spans if s.name == "code.run c")
    calls = [s for s in spans if s.name.startswith("execute_tool ")]
    assert [s.name for s in calls] == ["execute_tool lookup", "execute_tool secret",
                                       "execute_tool nothere"]
    assert all(s.parent_span_id == step.span_id for s in calls)
    assert [s.status.code for s in calls] == [0, ERROR, ERROR]
    first = _attributes(calls[0])
    assert first["gen_ai.tool.call.id"] == "c#a1.code.1"
    assert first["lwtool.tool.caller"] == "code" and first["gen_ai.tool.name"] == "lookup"
    assert "not in permissions.tools" in calls[1].status.message


def test_an_agent_step_is_invoke_agent_with_a_span_per_turn_and_tool_call(
        tmp_path: Path) -> None:
    from lwtool import ScriptedModel

    world = local_world(tmp_path)
    doc = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
           "metadata": {"name": "agent"}, "permissions": {"models": ["m"],
                                                          "tools": ["lookup"]},
           "steps": [{"id": "ask", "uses": "ai.agent", "with": {
               "model": "m", "tools": ["lookup"], "prompt": "Look twice."}}]}
    call = {"toolCalls": [{"name": "lookup", "arguments": {"key": "a"}}]}
    asyncio.run(run_workflow(doc, {}, world=world, run_id="agent",
                             models={"m": ScriptedModel([call, call, "done"])},
                             tools={"lookup": lambda a: {"value": a["key"]}}))
    world.close()
    spans = _exported("agent", tmp_path)
    step = next(s for s in spans if s.name == "invoke_agent ask")
    assert _attributes(step)["openinference.span.kind"] == "AGENT"
    assert _attributes(step)["gen_ai.operation.name"] == "invoke_agent"
    below = sorted((s for s in spans if s.parent_span_id == step.span_id),
                   key=lambda s: s.start_time_unix_nano)
    assert [s.name.split()[0] for s in below] == ["chat", "execute_tool", "chat",
                                                  "execute_tool", "chat"]
    assert [_attributes(s)["gen_ai.tool.call.id"] for s in below
            if s.name.startswith("execute_tool")] == ["ask#0.0", "ask#1.0"]


def test_a_killed_run_exports_what_it_committed(tmp_path: Path) -> None:
    (tmp_path / "seed.json").write_text('{"seed": "s"}')
    killed = subprocess.run(
        [sys.executable, "-m", "lwtool", "run", str(WORKFLOWS / "chain.lwir.yaml"), "--input",
         str(tmp_path / "seed.json"), "--tools", TOOLS, "--data-dir", str(tmp_path / "data"),
         "--run-id", "cut"], cwd=ROOT, capture_output=True, timeout=60,
        env={**os.environ, "LWTOOL_TEST_DIR": str(tmp_path),
             "LWTOOL_FAULT_KILL_AFTER": "StepCompleted@b"})
    assert killed.returncode == -signal.SIGKILL
    out = tmp_path / "cut.json"
    result = run_cli("export-otel", "cut", "--data-dir", str(tmp_path / "data"), "--file",
                     str(out))
    assert result.returncode == 0, result.stderr
    spans = json.loads(out.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    names = sorted(s["name"] for s in spans)
    assert names == ["execute_tool record", "execute_tool record", "invoke_workflow chain"]
    root = next(s for s in spans if "parentSpanId" not in s)
    status = {a["key"]: a["value"] for a in root["attributes"]}["lwtool.status"]
    assert status == {"stringValue": "running"}


def test_an_attempt_a_resume_started_again_is_an_interrupted_error_span(
        tmp_path: Path) -> None:
    """Killed after step b's model answered (committed) and before b completed, then
    resumed: b's first attempt ends at its last event with status ERROR, not `running`
    until the run's end; the resumed attempt reuses the answer."""
    data = ["--data-dir", str(tmp_path / "data")]
    killed = killed_two_steps(tmp_path, tmp_path / "data", "cut", "harness.model.responded@b")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert run_cli("replay", "cut", *data).returncode == 0
    out = tmp_path / "cut.json"
    assert run_cli("export-otel", "cut", *data, "--file", str(out)).returncode == 0
    spans = json.loads(out.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    steps = [({a["key"]: a["value"].get("stringValue") for a in s["attributes"]}, s)
             for s in spans if s["name"].startswith("ai.generate ")]
    states = [(a["lwtool.step.path"], a["lwtool.status"], s.get("status", {}))
              for a, s in steps]
    assert states[0] == ("a", "done", {}) and states[2] == ("b", "done", {}), states
    assert states[1][:2] == ("b", "interrupted") and states[1][2]["code"] == ERROR
    assert states[1][2]["message"].startswith("interrupted")
    assert int(steps[1][1]["endTimeUnixNano"]) <= int(steps[2][1]["startTimeUnixNano"])
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert len(chats) == 2 and all(not c.get("status", {}).get("code") for c in chats)


def test_refusals(tmp_path: Path) -> None:
    _review(tmp_path)
    both = run_cli("export-otel", "rev", "--data-dir", str(tmp_path), "--file", "x.json",
                   "--endpoint", "http://127.0.0.1:1")
    assert both.returncode == 2 and "not both" in both.stderr
    unknown = run_cli("export-otel", "nope", "--data-dir", str(tmp_path), "--file", "x.json")
    assert unknown.returncode == 2 and "no run nope" in unknown.stderr
    bad_url = run_cli("export-otel", "rev", "--data-dir", str(tmp_path), "--endpoint",
                      "localhost:4318")
    assert bad_url.returncode == 2 and "must be an http(s) URL" in bad_url.stderr
    with otlp_receiver() as receiver:
        receiver.status = 400  # not retryable: refused at once
        refused = run_cli("export-otel", "rev", "--data-dir", str(tmp_path), "--endpoint",
                          receiver.url, "--timeout", "3")
    assert refused.returncode == 2
    assert f"the collector at {receiver.url}/v1/traces did not accept" in refused.stderr
    assert "Traceback" not in refused.stderr
    unwritable = run_cli("export-otel", "rev", "--data-dir", str(tmp_path), "--file",
                         str(tmp_path / "missing" / "t.json"))
    assert unwritable.returncode == 2 and "cannot write" in unwritable.stderr


def test_a_harness_session_exports_its_turns_under_the_run(tmp_path: Path) -> None:
    harness_session_run(tmp_path)
    out = tmp_path / "chat.json"
    result = run_cli("export-otel", "chat", "--data-dir", str(tmp_path), "--file", str(out))
    assert result.returncode == 0, result.stderr
    spans = json.loads(out.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    root = next(s for s in spans if "parentSpanId" not in s)
    children = sorted(s["name"] for s in spans if s.get("parentSpanId") == root["spanId"])
    assert children == ["chat scripted", "chat scripted", "execute_tool add"]
    assert len(spans) == 4
