"""workflow.invoke's failure paths and checks: a child that fails fails the invoking
step with its cause; a child waiting for a person makes the parent wait until
`lwtool respond` answers the child; `validate` finds a missing child, a cycle through
two files and a child wider than its parent; editing a child changes the parent's
version id and `check` names the child; a version id the world does not hold is
refused before the run starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from lwtool.record.ids import child_run_id
from tests.conftest import ROOT, run_cli

TOOLS = f"{ROOT / 'tests' / 'runtime' / 'side_effects.py'}:tools"
HEAD = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow"}


def _write(folder: Path, name: str, steps: list[dict[str, Any]], tools: list[str],
           **more: Any) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({**HEAD, "metadata": {"name": name.split(".")[0]},
                                    "permissions": {"tools": tools, "models": []},
                                    **more, "steps": steps}))
    return path


def _invoke(child: str, **more: Any) -> dict[str, Any]:
    return {"id": "child", "uses": "workflow.invoke",
            "with": {"workflow": child, "input": {"id": "x", "n": 2, **more}}}


def _run(path: Path, folder: Path, *args: str) -> Any:
    (folder / "in.json").write_text("{}")
    return run_cli("run", str(path), "-i", str(folder / "in.json"), "--tools", TOOLS,
                   "--data-dir", str(folder / "data"), "--run-id", "P", *args,
                   env={"LWTOOL_TEST_DIR": str(folder)})


def test_a_child_that_fails_fails_the_invoking_step_with_its_cause(tmp_path: Path) -> None:
    _write(tmp_path, "child.lwir.yaml", [{"id": "w", "uses": "tool.call",
                                          "with": {"tool": "work"}, "input": "{{ input }}"}],
           ["work"])
    parent = _write(tmp_path, "parent.lwir.yaml", [_invoke("./child.lwir.yaml", fail=True)],
                    ["work"])
    failed = _run(parent, tmp_path, "--json")
    assert failed.returncode == 1
    document = json.loads(failed.stdout)
    child = child_run_id("P", "child")
    assert document["causeCode"] == "step_failed" and document["failedStepPath"] == "child"
    assert f"child run {child} failed at w: tool 'work' raised RuntimeError: item x is " \
        "broken" in document["message"]
    ended = json.loads(run_cli("events", "P", "--data-dir", str(tmp_path / "data"), "--json",
                               "--type", "RunFailed").stdout)
    assert ended["payload"]["childRunId"] == child
    assert ended["payload"]["childFailedStepPath"] == "w"


def test_a_child_waiting_for_a_person_makes_the_parent_wait(tmp_path: Path) -> None:
    ask = {"id": "ask", "uses": "human.input", "with": {
        "prompt": "a number?", "schema": {"type": "integer"}}}
    use = {"id": "w", "uses": "tool.call", "needs": ["ask"], "with": {"tool": "work"},
           "input": {"id": "y", "n": "{{ steps.ask.output }}"}}
    _write(tmp_path, "child.lwir.yaml", [ask, use], ["work"])
    parent = _write(tmp_path, "parent.lwir.yaml", [_invoke("./child.lwir.yaml")], ["work"])
    waiting = _run(parent, tmp_path)
    assert waiting.returncode != 0
    child = child_run_id("P", "child")
    data = ["--data-dir", str(tmp_path / "data")]
    listed = run_cli("runs", *data).stdout
    assert "P waits for its sub-runs" in listed and f"lwtool respond {child} ask" in listed
    (tmp_path / "answer.json").write_text("21")
    answered = run_cli("respond", child, "ask", "--input", str(tmp_path / "answer.json"),
                       *data)
    assert answered.returncode == 0, answered.stderr
    resumed = run_cli("replay", "P", "--tools", TOOLS, *data, "--json",
                      env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == {"id": "y", "double": 42}


def test_validate_finds_missing_children_cycles_and_wider_children(tmp_path: Path) -> None:
    _write(tmp_path, "a.lwir.yaml", [_invoke("./b.lwir.yaml")], ["work"])
    _write(tmp_path, "b.lwir.yaml", [_invoke("./a.lwir.yaml")], ["work"])
    _write(tmp_path, "wide.lwir.yaml", [{"id": "w", "uses": "tool.call",
                                         "with": {"tool": "work"}}], ["work"])
    _write(tmp_path, "narrow.lwir.yaml", [_invoke("./wide.lwir.yaml")], [])
    _write(tmp_path, "lost.lwir.yaml", [_invoke("./nowhere.lwir.yaml")], [])
    found = run_cli("validate", "a.lwir.yaml", "narrow.lwir.yaml", "lost.lwir.yaml",
                    "-f", "json", cwd=tmp_path)
    assert found.returncode == 1
    codes = {(report["path"], f["code"], f["pointer"], f["message"])
             for report in json.loads(found.stdout)["files"] for f in report["findings"]}
    assert codes == {
        ("a.lwir.yaml", "invoke.cycle", "/steps/0/with/workflow",
         "workflow.invoke makes a cycle: a.lwir.yaml -> b.lwir.yaml -> a.lwir.yaml"),
        ("narrow.lwir.yaml", "invoke.wider_permissions", "/steps/0/with/workflow",
         "the child workflow reaches tool work, which this workflow's permissions.tools "
         "do not grant (a child may reach only what its parent may)"),
        ("lost.lwir.yaml", "invoke.child_invalid", "/steps/0/with/workflow",
         "child workflow ./nowhere.lwir.yaml does not exist (paths are relative to the "
         "invoking file)")}
    portable = run_cli("validate", "--portable", "narrow.lwir.yaml", cwd=tmp_path).stdout
    assert "the workflow.invoke step is an lwtool extension" in portable


def test_a_childs_edit_changes_the_parents_version_and_check_names_it(
        tmp_path: Path) -> None:
    child = _write(tmp_path, "child.lwir.yaml", [{"id": "w", "uses": "tool.call",
                                                  "with": {"tool": "work"}}], ["work"])
    _write(tmp_path, "parent.lwir.yaml", [_invoke("./child.lwir.yaml")], ["work"])
    before = run_cli("hash", "parent.lwir.yaml", cwd=tmp_path).stdout
    assert run_cli("lock", "parent.lwir.yaml", cwd=tmp_path).returncode == 0
    lock = json.loads((tmp_path / "parent.lwir.lock.json").read_text())
    child_id = run_cli("hash", "child.lwir.yaml", cwd=tmp_path).stdout.strip()
    assert lock["children"] == {"/steps/0": child_id}
    assert run_cli("check", "parent.lwir.yaml", cwd=tmp_path).returncode == 0
    child.write_text(child.read_text().replace("id: w", "id: w2"))
    assert run_cli("hash", "parent.lwir.yaml", cwd=tmp_path).stdout != before
    stale = run_cli("check", "parent.lwir.yaml", cwd=tmp_path)
    assert stale.returncode == 1
    assert "lock.stale child workflow ./child.lwir.yaml (at /steps/0) changed" in stale.stdout


def test_a_version_the_world_does_not_hold_is_refused_before_the_run(tmp_path: Path) -> None:
    parent = _write(tmp_path, "parent.lwir.yaml", [_invoke("sha256:" + "0" * 64)], ["work"])
    refused = _run(parent, tmp_path)
    assert refused.returncode != 0
    assert f"the world holds no WorkflowVersion sha256:{'0' * 64}" in refused.stderr
    assert "no runs" in run_cli("runs", "--data-dir", str(tmp_path / "data")).stdout


def test_retrying_the_parent_retries_its_failed_child(tmp_path: Path) -> None:
    steps = [{"id": "before", "uses": "tool.call", "with": {"tool": "record"},
              "input": {"key": "before"}},
             {"id": "g", "uses": "tool.call", "needs": ["before"], "with": {"tool": "gate"},
              "input": {"key": "g"}}]
    _write(tmp_path, "child.lwir.yaml", steps, ["record", "gate"])
    parent = _write(tmp_path, "parent.lwir.yaml", [_invoke("./child.lwir.yaml")],
                    ["record", "gate"])
    (tmp_path / "gate-closed").write_text("")
    assert _run(parent, tmp_path).returncode == 1
    (tmp_path / "gate-closed").unlink()
    retried = run_cli("retry", "P", "--tools", TOOLS, "--data-dir", str(tmp_path / "data"),
                      "--json", env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert retried.returncode == 0, retried.stderr
    assert json.loads(retried.stdout)["output"] == {"key": "g", "open": True}
    calls = (tmp_path / "calls.log").read_text().split()
    assert calls == ["record:before", "gate:g", "gate:g"]  # the child's failed step only


def test_children_nest_in_the_graph_the_report_and_the_trace(tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    ran = run_cli("run", "examples/compose/polish-all.lwir.yaml", "-i",
                  "examples/inputs/polish-all.json", "--tools", "examples/tools.py:tools",
                  "--run-id", "polish", *data)
    assert ran.returncode == 0, ran.stderr
    children = [child_run_id("polish", f"each[{n}].polish") for n in (0, 1)]
    rows = json.loads(run_cli("runs", *data, "--json").stdout)
    assert [(r["runId"], r.get("parentRunId")) for r in rows] == [
        ("polish", None), *((child, "polish") for child in children)]
    report = json.loads(run_cli("report", "polish", *data, "--json").stdout)
    assert [r["runId"] for r in report["runs"]] == ["polish", *children]
    version = json.loads(run_cli("version", "polish", *data, "--json").stdout)
    assert [(c["pointer"], c["name"], c["held"]) for c in version["children"]] == [
        ("/steps/0/steps/0", "refine-loop", True)]
    graph = run_cli("graph", "examples/compose/polish-all.lwir.yaml").stdout
    assert "workflow.invoke → refine-loop.lwir.yaml" in graph
    out = tmp_path / "trace.json"
    assert run_cli("export-otel", "polish", *data, "--file", str(out)).returncode == 0
    spans = json.loads(out.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    names = {s["spanId"]: s["name"] for s in spans}
    roots = [s for s in spans if s["name"] == "invoke_workflow refine-loop"]
    assert len({s["traceId"] for s in spans}) == 1 and len(roots) == 2
    assert sorted(names[s["parentSpanId"]] for s in roots) == [
        "workflow.invoke each[0].polish", "workflow.invoke each[1].polish"]
    from starlette.testclient import TestClient

    from lwtool.ui.app import create_app
    from lwtool.world.local import LocalWorld

    world = LocalWorld(tmp_path / "data", read_only=True)
    try:
        with TestClient(create_app(world), base_url="http://127.0.0.1") as client:
            parent = client.get("/runs/polish").text
            assert all(f'href="/runs/{child}"' in parent for child in children)
            child_page = client.get(f"/runs/{children[0]}").text
            assert 'id="parent-run" href="/runs/polish"' in child_page
    finally:
        world.close()


def test_a_childs_model_calls_count_against_the_parents_budget(tmp_path: Path) -> None:
    say = {"uses": "ai.generate", "with": {"model": "writer", "prompt": "say {{ input.n }}"}}
    child = {**HEAD, "metadata": {"name": "child"}, "permissions": {"models": ["writer"]},
             "steps": [{"id": "a", **say}, {"id": "b", "needs": ["a"], **say}]}
    (tmp_path / "child.lwir.yaml").write_text(yaml.safe_dump(child))
    parent = {**HEAD, "metadata": {"name": "parent"},
              "permissions": {"tools": [], "models": ["writer"]},
              "steps": [{"id": "first", **say},
                        {"id": "child", "uses": "workflow.invoke", "needs": ["first"],
                         "with": {"workflow": "./child.lwir.yaml", "input": {"n": 1}}}]}
    (tmp_path / "parent.lwir.yaml").write_text(yaml.safe_dump(parent))
    (tmp_path / "models.yaml").write_text("writer: offline\n")
    (tmp_path / "in.json").write_text('{"n": 0}')
    data = ["--data-dir", str(tmp_path / "data")]
    spent = run_cli("run", str(tmp_path / "parent.lwir.yaml"), "-i", str(tmp_path / "in.json"),
                    "--models", str(tmp_path / "models.yaml"), "--run-id", "P",
                    "--max-tokens", "20", "--json", *data)
    assert spent.returncode == 1, spent.stderr
    failed = json.loads(spent.stdout)
    assert failed["causeCode"] == "budget_exceeded" and failed["failedStepPath"] == "child"
    # 14 tokens a reply: the parent's first and the child's first (28) spend the 20;
    # the child's second call is refused, though the child alone spent 14
    assert "the token budget is spent: 28 tokens used of 20" in failed["message"]
    child_id = child_run_id("P", "child")
    replies = [line for run in ("P", child_id) for line in run_cli(
        "events", run, *data, "--json", "--type", "harness.model.responded").stdout.splitlines()]
    assert len(replies) == 2


def test_a_loop_starts_a_child_per_visit_and_a_fork_its_own(tmp_path: Path) -> None:
    """An invoke on a decision loop starts one child per visit (`.visit[N]` in its
    path); the events link both ways; a fork of the parent starts children of its own."""
    child = {**HEAD, "metadata": {"name": "child"}, "permissions": {"tools": ["work"]},
             "steps": [{"id": "w", "uses": "tool.call", "with": {"tool": "work"},
                        "input": "{{ input }}"}]}
    (tmp_path / "child.lwir.yaml").write_text(yaml.safe_dump(child))
    steps = [{"id": "call", "uses": "workflow.invoke", "maxVisits": 3,
              "with": {"workflow": "./child.lwir.yaml", "input": {
                  "id": "x", "n": "{{ length(coalesce(steps.call.allVisits, [])) }}"}}},
             {"id": "again", "uses": "decision", "needs": ["call"], "maxVisits": 3,
              "with": {"cases": [{"when": "{{ steps.call.lastOutput.double >= 2 }}",
                                  "to": "end"}], "default": "call"}}]
    parent = _write(tmp_path, "parent.lwir.yaml", steps, ["work"])
    ran = _run(parent, tmp_path, "--json")
    assert ran.returncode == 0, ran.stderr
    data = ["--data-dir", str(tmp_path / "data")]
    rows = json.loads(run_cli("runs", *data, "--json").stdout)
    visits = [child_run_id("P", f"call.visit[{n}]") for n in (0, 1)]
    assert [r["runId"] for r in rows if r.get("parentRunId") == "P"] == visits
    started = [json.loads(line)["payload"] for line in run_cli(
        "events", "P", *data, "--json", "--type", "harness.execute_step.started").stdout
        .splitlines()]
    assert [s["childRunId"] for s in started if "childRunId" in s] == visits
    links = json.loads(run_cli("events", visits[1], *data, "--json", "--type",
                               "RunStarted").stdout)["payload"]["links"]
    assert links == {"parentRunId": "P", "parentStepPath": "call.visit[1]",
                     "rootRunId": "P"}
    forked = run_cli("fork", "P", "--from", "call", "--run-id", "F", "--tools", TOOLS,
                     *data, env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert forked.returncode == 0, forked.stderr
    rows = json.loads(run_cli("runs", *data, "--json").stdout)
    assert [r["runId"] for r in rows if r.get("parentRunId") == "F"] == [
        child_run_id("F", f"call.visit[{n}]") for n in (0, 1)]


def test_a_replay_runs_the_child_version_the_parent_locked(tmp_path: Path) -> None:
    """Killed before its child started, then the child file edited: the replay runs the
    child version the parent's run locked, not the file as it is now."""
    child = _write(tmp_path, "child.lwir.yaml", [{"id": "w", "uses": "tool.call",
                                                  "with": {"tool": "work"},
                                                  "input": "{{ input }}"}], ["work"])
    steps = [{"id": "first", "uses": "tool.call", "with": {"tool": "record"},
              "input": {"key": "first"}}, {**_invoke("./child.lwir.yaml"), "needs": ["first"]}]
    parent = _write(tmp_path, "parent.lwir.yaml", steps, ["work", "record"])
    (tmp_path / "in.json").write_text("{}")
    data = ["--data-dir", str(tmp_path / "data")]
    killed = run_cli("run", str(parent), "-i", str(tmp_path / "in.json"), "--tools", TOOLS,
                     "--run-id", "P", *data, env={"LWTOOL_TEST_DIR": str(tmp_path),
                                                  "LWTOOL_FAULT_KILL_AFTER": "StepCompleted@first"})
    assert killed.returncode == -9
    locked_child = run_cli("hash", str(child)).stdout.strip()
    child.write_text(child.read_text().replace("tool: work", "tool: record"))
    resumed = run_cli("replay", "P", "--tools", TOOLS, *data, "--json",
                      env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == {"id": "x", "double": 4}
    started = json.loads(run_cli("events", child_run_id("P", "child"), *data, "--json",
                                 "--type", "RunStarted").stdout)
    assert started["payload"]["workflowVersionId"] == locked_child


def test_a_parents_own_calls_after_its_child_see_the_childs_spend(tmp_path: Path) -> None:
    """The parent's budget is held against its children's replies too: its own call
    after a child that spent the rest is refused."""
    say = {"uses": "ai.generate", "with": {"model": "writer", "prompt": "say {{ input.n }}"}}
    child = {**HEAD, "metadata": {"name": "child"}, "permissions": {"models": ["writer"]},
             "steps": [{"id": "a", **say}]}
    (tmp_path / "child.lwir.yaml").write_text(yaml.safe_dump(child))
    parent = {**HEAD, "metadata": {"name": "parent"},
              "permissions": {"tools": [], "models": ["writer"]},
              "steps": [{"id": "first", **say},
                        {"id": "child", "uses": "workflow.invoke", "needs": ["first"],
                         "with": {"workflow": "./child.lwir.yaml", "input": {"n": 1}}},
                        {"id": "last", "needs": ["child"], **say}]}
    (tmp_path / "parent.lwir.yaml").write_text(yaml.safe_dump(parent))
    (tmp_path / "models.yaml").write_text("writer: offline\n")
    (tmp_path / "in.json").write_text('{"n": 0}')
    spent = run_cli("run", str(tmp_path / "parent.lwir.yaml"), "-i", str(tmp_path / "in.json"),
                    "--models", str(tmp_path / "models.yaml"), "--run-id", "P",
                    "--max-tokens", "20", "--json", "--data-dir", str(tmp_path / "data"))
    assert spent.returncode == 1, spent.stdout
    failed = json.loads(spent.stdout)
    assert failed["causeCode"] == "budget_exceeded" and failed["failedStepPath"] == "last"
    assert "28 tokens used of 20" in failed["message"]
