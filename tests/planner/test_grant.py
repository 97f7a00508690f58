"""A planner draft never gets more than its definition grants. A hostile planner model
(behind litellm, on a loopback server) tries each of the three doors through `lwtool run
DEFINITION`: a registered tool the definition does not declare, a model outside the
definition's slots (the planner's own included), and a code.run sandbox wider than
`planner.maxCodeSandbox`. Each draft is sent back with findings naming what is granted,
nothing runs, and planning ends `planner_validation_exhausted`; a repaired draft runs.
A version a planner locked before the grant was enforced is refused before it runs."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, local_world
from lwtool.calls.scripted import ScriptedModel
from lwtool.planner import compile_loop, repair
from lwtool.planner.compile_loop import plan_workflow
from lwtool.planner.grant import Grant, excesses
from tests.conftest import run_cli
from tests.fixtures.openai_server import fixture_server
from tests.planner.test_compile_loop import DEFINITION, GOOD, _tools
from tests.planner.test_plan_cli import DEFINITION as CLI_DEFINITION
from tests.planner.test_plan_cli import _env, _submit

DEFINITION_YAML = CLI_DEFINITION.replace("maxWorkflowRevisions: 2", "maxWorkflowRevisions: 1")
# readSecret is registered (the module serves other workflows too) but not declared.
TOOLS = """\
from pathlib import Path

def creditScore(args):
    Path('called-creditScore').touch()
    return {'score': 700}

def readSecret(args):
    Path('called-readSecret').touch()
    return 'the secret'

tools = {'creditScore': creditScore, 'readSecret': readSecret}
"""
CODE = "export async function run({ input }) { return Deno.env.get('OPENAI_API_KEY'); }\n"


def undeclared_tool() -> dict[str, Any]:
    draft = copy.deepcopy(GOOD)
    draft["permissions"]["tools"] = ["creditScore", "readSecret"]
    draft["steps"][0]["with"]["tool"] = "readSecret"
    return draft


def foreign_model(model: str) -> dict[str, Any]:
    draft = copy.deepcopy(GOOD)
    draft["permissions"]["models"] = [model]
    draft["steps"][1]["with"]["model"] = model
    return draft


def secret_grab() -> dict[str, Any]:
    draft = copy.deepcopy(GOOD)
    draft["permissions"]["secrets"] = ["OPENAI_API_KEY"]
    draft["steps"][0]["secrets"] = ["OPENAI_API_KEY"]
    return draft


def wide_network(*hosts: str) -> dict[str, Any]:
    draft = copy.deepcopy(GOOD)
    draft["permissions"]["network"] = list(hosts)
    return draft


def wide_sandbox(**sandbox: str) -> dict[str, Any]:
    draft = copy.deepcopy(GOOD)
    draft["steps"].insert(0, {"id": "leak", "uses": "code.run", "with": {
        "entrypoint": "main.ts", "files": {"main.ts": {"content": CODE}},
        "sandbox": sandbox}})
    draft["steps"][1]["needs"] = ["leak"]
    return draft


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "loan.definition.yaml").write_text(DEFINITION_YAML)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "in.json").write_text('{"applicant": "Ann"}')
    (tmp_path / "models.yaml").write_text("planner: openai/gpt-4o-mini\n")
    return tmp_path


def _run(folder: Path, server: Any) -> Any:
    return run_cli("run", "loan.definition.yaml", "-i", "in.json", "--tools", "tools.py:tools",
                   "--models", "models.yaml", "--data-dir", "data", "--run-id", "r1",
                   "--json", cwd=folder, env=_env(server))


@pytest.mark.parametrize(("draft", "code", "pointer", "granted"), [
    (undeclared_tool(), "grant.tool", "/permissions/tools/1", "creditScore"),
    (foreign_model("planner"), "grant.model", "/permissions/models/0", "gpt-4o-mini"),
    (foreign_model("openai/gpt-4o"), "grant.model", "/permissions/models/0", "gpt-4o-mini"),
    (wide_sandbox(network="allow", env="allow", fs="allow"), "grant.sandbox",
     "/steps/0/with/sandbox/network", "deny"),
    (secret_grab(), "grant.secret", "/permissions/secrets/0", "none"),
    (wide_network("attacker.example"), "grant.network", "/permissions/network/0", "none"),
], ids=["undeclared-tool", "planner-model", "any-model-string", "wide-sandbox",
        "ungranted-secret", "ungranted-host"])
def test_a_hostile_planner_is_sent_findings_and_never_run(
        folder: Path, draft: dict[str, Any], code: str, pointer: str, granted: str) -> None:
    with fixture_server([_submit(draft), _submit(draft)]) as server:
        done = _run(folder, server)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "planner_validation_exhausted" in done.stderr
    assert not list(folder.glob("called-*"))  # no tool ran, the API key went nowhere
    assert "sk-fixture" not in done.stdout + done.stderr
    answer = json.loads(server.requests[1]["messages"][-1]["content"])
    assert answer["accepted"] is False
    finding = next(f for f in answer["findings"] if f["code"] == code)
    assert finding["pointer"] == pointer and granted in finding["message"]
    runs = run_cli("runs", "--data-dir", "data", "--json", cwd=folder).stdout
    listed = json.loads(runs)  # only the planner session ran, as r1's part
    assert [(r["runId"], r["parentRunId"], r["workflow"]) for r in listed] == [
        ("r1.plan", "r1", "loan (planner)")]
    session = json.loads(run_cli("events", "r1.plan", "--json", "--type",
                                 "harness.session.started", "--data-dir", "data",
                                 cwd=folder).stdout)
    assert session["payload"]["parentRunId"] == "r1"


def test_every_door_of_a_wide_sandbox_gets_its_own_finding() -> None:
    found = excesses(wide_sandbox(network="allow", env="allow", fs="read"), Grant.of(DEFINITION))
    assert [(e.code, e.pointer.rsplit("/", 1)[-1]) for e in found] == [
        ("grant.sandbox", "network"), ("grant.sandbox", "env"), ("grant.sandbox", "fs")]


def test_a_sandbox_inside_the_granted_one_is_accepted() -> None:
    definition = {**DEFINITION, "planner": {**DEFINITION["planner"],
                                            "maxCodeSandbox": {"fs": "read"}}}
    grant = Grant.of(definition)
    assert excesses(wide_sandbox(fs="read"), grant) == []
    assert excesses(wide_sandbox(fs="deny"), grant) == []
    assert [e.message for e in excesses(wide_sandbox(fs="allow"), grant)] == [
        "sandbox.fs: allow is wider than the definition allows "
        "(planner.maxCodeSandbox.fs: read); use read"]
    nested = {"id": "each", "uses": "parallel", "with": {}, "steps": [
        wide_sandbox(network="allow")["steps"][0]]}
    assert [e.pointer for e in excesses({"steps": [nested]}, grant)] == [
        "/steps/0/steps/0/with/sandbox/network"]


def test_secrets_and_hosts_inside_the_definitions_are_accepted() -> None:
    grant = Grant.of({**DEFINITION, "secrets": ["OPENAI_API_KEY"],
                      "network": ["*.example.com", "api.other.org:443"]})
    assert excesses(secret_grab(), grant) == []
    inside = wide_network("api.example.com:443", "example.com", "api.other.org:443")
    assert excesses(inside, grant) == []
    outside = wide_network("api.example.com", "api.other.org", "evil.com", "example.com.evil")
    assert [(e.code, e.text) for e in excesses(outside, grant)] == [
        ("grant.network", "api.other.org"), ("grant.network", "evil.com"),
        ("grant.network", "example.com.evil")]


def test_the_request_tells_the_planner_what_is_granted(folder: Path) -> None:
    with fixture_server([_submit(undeclared_tool()), _submit(GOOD)]) as server:
        done = _run(folder, server)
    assert done.returncode == 0, done.stderr
    assert (folder / "called-creditScore").exists()
    assert not (folder / "called-readSecret").exists()
    request = json.loads(server.requests[0]["messages"][1]["content"].split("\n\n", 1)[1])
    assert [t["name"] for t in request["tools"]] == ["creditScore"]
    assert request["maxCodeSandbox"] == {"network": "deny", "env": "deny", "fs": "deny"}
    assert request["secrets"] == [] and request["network"] == []


def test_a_version_locked_beyond_the_grant_is_refused_before_it_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A planner session that locked an over-wide version (as lwtool did before the
    grant was enforced) resumes to a refusal, not a run."""
    world = local_world(tmp_path / "data")
    with monkeypatch.context() as patch:
        patch.setattr(repair, "excesses", lambda lwir, grant: [])
        patch.setattr(compile_loop, "excesses", lambda lwir, grant: [])
        first = asyncio.run(plan_workflow(world, DEFINITION, {"applicant": "Ann"}, _tools(),
                                          ScriptedModel([{"toolCalls": [{
                                              "name": "submit_workflow",
                                              "arguments": foreign_model("planner")}]},
                                              "done"]), run_id="p1"))
    assert first.lwir["permissions"]["models"] == ["planner"]
    with pytest.raises(RunFailedError) as info:
        asyncio.run(plan_workflow(world, DEFINITION, {"applicant": "Ann"}, _tools(),
                                  ScriptedModel([]), run_id="p1"))
    assert info.value.cause_code == "runtime_config_error"
    assert "/permissions/models/0" in info.value.message and "'planner'" in info.value.message


def test_a_draft_too_large_to_check_later_is_not_locked(tmp_path: Path) -> None:
    """A large draft was locked, then refused by `lwtool check` (over 8 MiB as YAML):
    drafts are capped at 1 MiB of JSON."""
    big = copy.deepcopy(GOOD)
    big["steps"][1]["with"]["prompt"] = "Summarize. " + "x" * (5 << 20)
    with pytest.raises(RunFailedError) as info:
        asyncio.run(plan_workflow(local_world(tmp_path / "data"), DEFINITION,
                                  {"applicant": "Ann"}, _tools(),
                                  ScriptedModel([{"toolCalls": [{
                                      "name": "submit_workflow", "arguments": big}]}] * 3),
                                  run_id="big"))
    assert info.value.cause_code == "planner_validation_exhausted"
    world = local_world(tmp_path / "data")
    locked = [json.dumps(world.get_version(v)) for v in world.version_ids()]
    assert not any("x" * 1000 in text for text in locked)  # only the session's own
