"""`lwtool run/replay/events/report/runs` as a user runs them, failure paths included."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, edit_store, run_cli

EX = ROOT / "examples"
TOOLS = f"{EX / 'tools.py'}:tools"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


def _run_loop(data: Path, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli("run", str(EX / "refine-loop.lwir.yaml"), "--input",
                   str(EX / "inputs" / "refine-loop.json"), "--tools", TOOLS,
                   "--data-dir", str(data), *extra)


def test_run_prints_output_and_announces_the_run_id(data: Path) -> None:
    result = _run_loop(data)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"text": "Durable workflows replay after a crash!!!",
                                         "rounds": 3}
    assert result.stderr.startswith("lwtool: run run_")


def test_run_json_and_replay_give_the_same_result(data: Path) -> None:
    first = _run_loop(data, "--json", "--run-id", "run_fixed")
    result = json.loads(first.stdout)
    assert set(result) == {"runId", "workflowVersionId", "status", "output", "usage",
                           "artifacts"}
    assert result["runId"] == "run_fixed" and result["status"] == "completed"
    replay = run_cli("replay", "run_fixed", "--data-dir", str(data), "--json")
    assert replay.returncode == 0 and json.loads(replay.stdout) == result
    again = _run_loop(data, "--json", "--run-id", "run_fixed")
    assert json.loads(again.stdout) == result  # an existing id resumes, it does not rerun
    runs = json.loads(run_cli("runs", "--json", "--data-dir", str(data)).stdout)
    assert [(r["runId"], r["status"]) for r in runs] == [("run_fixed", "completed")]


def test_offline_model_example(data: Path) -> None:
    result = run_cli("run", str(EX / "candidate-review.lwir.yaml"), "--input",
                     str(EX / "inputs" / "candidate-review.json"), "--models",
                     str(EX / "models.offline.yaml"), "--data-dir", str(data), "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert len(payload["output"]) == 3 and all(o["passed"] for o in payload["output"])
    report = run_cli("report", payload["runId"], "--data-dir", str(data), "--json")
    parsed = json.loads(report.stdout)
    assert parsed["run"]["costUsd"] is None and parsed["run"]["unpricedCalls"] == 6
    assert set(parsed["steps"]) == {f"review-cands[cand_00{i}].{s}.visit[0]"
                                    for i in (1, 2, 3) for s in ("worker", "review")}
    text = run_cli("report", payload["runId"], "--data-dir", str(data)).stdout
    assert "unpriced" in text


def test_events_filters(data: Path) -> None:
    _run_loop(data, "--run-id", "run_ev")
    lines = run_cli("events", "run_ev", "--data-dir", str(data), "--json").stdout.splitlines()
    events = [json.loads(line) for line in lines]
    assert events[0]["type"] == "RunStarted" and events[-1]["type"] == "RunCompleted"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert all({"seq", "type", "runId", "payload"} <= set(e) for e in events)
    steps = [json.loads(line) for line in run_cli(
        "events", "run_ev", "--data-dir", str(data), "--type", "harness.execute_step.*",
        "--json").stdout.splitlines()]
    # 7 tool.call attempts and 3 decisions, each started + succeeded; a tool.call step is
    # a direct-execute step, so it has no harness.tool_call.* events
    assert len(steps) == 20
    assert [e["payload"].get("toolName") for e in steps[:1]] == ["improve"]
    assert run_cli("events", "run_ev", "--data-dir", str(data), "--type",
                   "harness.tool_call.*").stdout == ""
    for bad in ("robot", "step"):
        assert run_cli("events", "run_ev", "--data-dir", str(data), "--caller",
                       bad).returncode == 2


def test_failed_run_json_and_exit_code(data: Path, tmp_path: Path) -> None:
    bad_input = tmp_path / "in.json"
    bad_input.write_text('{"text": ""}')
    failed = run_cli("run", str(EX / "refine-loop.lwir.yaml"), "--input", str(bad_input),
                     "--tools", TOOLS, "--data-dir", str(data), "--json")
    assert failed.returncode == 1
    payload = json.loads(failed.stdout)
    assert payload["status"] == "failed" and payload["causeCode"] == "input_schema_error"
    assert {"runId", "status", "causeCode", "failedStepPath"} <= set(payload)
    assert "input_schema_error" in failed.stderr and "Traceback" not in failed.stderr


@pytest.mark.parametrize(("args", "needle"), [
    (["replay", "run_nope"], "no run run_nope"),
    (["events", "run_nope"], "no run run_nope"),
    (["report", "run_nope"], "no run run_nope"),
])
def test_unknown_run_id(data: Path, args: list[str], needle: str) -> None:
    _run_loop(data)
    result = run_cli(*args, "--data-dir", str(data))
    assert result.returncode == 2 and needle in result.stderr


def test_missing_tools_and_bad_inputs_are_usage_errors(data: Path, tmp_path: Path) -> None:
    loop = str(EX / "refine-loop.lwir.yaml")
    inp = str(EX / "inputs" / "refine-loop.json")
    cases = [
        (["run", loop, "--input", inp, "--tools", "nope_module:tools"], "cannot import"),
        (["run", loop, "--input", inp, "--tools", f"{EX / 'tools.py'}:missing"], "no attribute"),
        (["run", loop, "--input", str(tmp_path / "none.json")], "does not exist"),
        (["run", str(tmp_path / "none.yaml"), "--input", inp], "cannot read"),
    ]
    broken = tmp_path / "broken.json"
    broken.write_text('{"text": ')
    cases.append((["run", loop, "--input", str(broken)], "broken.json:1:"))
    exits = tmp_path / "exits.py"  # it exited 4 with no message
    exits.write_text("import sys\nsys.exit(4)\n")
    cases.append((["run", loop, "--input", inp, "--tools", f"{exits}:tools"],
                  "it called sys.exit(4) while being imported"))
    odd_keys = tmp_path / "odd_keys.py"  # it was a traceback
    odd_keys.write_text("tools = {1: print}\nnot_callable = {'t': 3}\n")
    cases.append((["run", loop, "--input", inp, "--tools", f"{odd_keys}:tools"],
                  "names a tool 1: tool names are non-empty strings"))
    cases.append((["run", loop, "--input", inp, "--tools", f"{odd_keys}:not_callable"],
                  "tool 't' is a int, not a callable"))
    for args, needle in cases:
        result = run_cli(*args, "--data-dir", str(data))
        assert result.returncode == 2, (args, result.stderr)
        assert needle in result.stderr and "Traceback" not in result.stderr


def test_a_run_without_its_tools_is_refused_before_anything_runs(data: Path) -> None:
    """As a model slot that resolves to nothing: one line, exit 2, nothing recorded (it
    was a run failed at its first tool step, which could not be recovered)."""
    result = run_cli("run", str(EX / "refine-loop.lwir.yaml"), "--input",
                     str(EX / "inputs" / "refine-loop.json"), "--data-dir", str(data))
    assert result.returncode == 2
    assert result.stderr == (
        "lwtool: the workflow calls tools 'checkText', 'improve', 'publish' that are not "
        "provided (tools given: none): pass --tools MODULE:ATTR that registers them; "
        "nothing was run\n")
    assert run_cli("runs", "--data-dir", str(data)).stdout.strip() == "no runs"


def test_invalid_workflow_is_not_run(data: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.lwir.yaml"
    source = (EX / "refine-loop.lwir.yaml").read_text()
    bad.write_text(source.replace("maxVisits: 4", "maxVisits: 0"))
    result = run_cli("run", str(bad), "--input", str(EX / "inputs" / "refine-loop.json"),
                     "--data-dir", str(data))
    assert result.returncode == 1 and "step.max_visits_out_of_range" in result.stderr
    assert not (data / "events" / "events.db").exists()


def test_definition_with_a_fixed_plan_runs_the_plan(data: Path, tmp_path: Path) -> None:
    definition = tmp_path / "loop.definition.yaml"
    definition.write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\nid: loop\n"
        "tools: [improve, checkText, publish]\n"
        f"planner: {{plan: {EX / 'refine-loop.lwir.yaml'}}}\n")
    assert run_cli("validate", str(definition)).returncode == 0
    result = run_cli("run", str(definition), "--input", str(EX / "inputs" / "refine-loop.json"),
                     "--tools", TOOLS, "--data-dir", str(data))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["rounds"] == 3


def test_a_damaged_run_input_is_named_by_runs_events_and_replay(data: Path) -> None:
    """`lwtool runs` was a traceback here; `events` and `replay` refused it cleanly."""
    _run_loop(data, "--run-id", "run_bad_input")
    with sqlite3.connect(data / "events" / "events.db") as conn:
        conn.execute("UPDATE runs SET input = '{not json' WHERE run_id = 'run_bad_input'")
    for args in (["runs"], ["runs", "--json"], ["events", "run_bad_input"],
                 ["replay", "run_bad_input"]):
        result = run_cli(*args, "--data-dir", str(data))
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert "run_bad_input" in result.stderr and "damaged" in result.stderr
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("damage", ["garbage", "truncate"])
def test_damaged_data_dir_is_reported_not_crashed(data: Path, damage: str) -> None:
    _run_loop(data, "--run-id", "run_dmg")
    db = data / "events" / "events.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if damage == "garbage":
        db.write_bytes(b"this is not a database" * 100)
    else:
        db.write_bytes(db.read_bytes()[:1500])
    for args in (["replay", "run_dmg"], ["runs"], ["events", "run_dmg"]):
        result = run_cli(*args, "--data-dir", str(data))
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr and str(data) in result.stderr


_RETARGET = ("UPDATE events SET payload = replace(payload, '\"stepId\":\"check\"', "
             "'\"stepId\":\"other\"') WHERE run_id = 'run_t' AND type = 'StepCompleted'")
_REOPEN = ("DELETE FROM events WHERE run_id = 'run_t' AND type = 'RunCompleted'",
           "UPDATE runs SET status = 'running' WHERE run_id = 'run_t'")


def test_edited_history_breaks_the_chain(data: Path) -> None:
    """An event edited in place no longer matches its hash: replay refuses the log."""
    _run_loop(data, "--run-id", "run_t")
    edit_store(data, _RETARGET, *_REOPEN, rechain=None)
    result = run_cli("replay", "run_t", "--tools", TOOLS, "--data-dir", str(data))
    assert result.returncode == 2
    assert result.stderr.startswith("lwtool: run run_t: the event log is damaged: event ")
    assert "does not match its hash" in result.stderr


def test_rechained_foreign_history_is_nondeterminism(data: Path) -> None:
    """A log with a valid chain whose step at a path is not the workflow's is refused."""
    _run_loop(data, "--run-id", "run_t")
    edit_store(data, _RETARGET, *_REOPEN, rechain="run_t")
    result = run_cli("replay", "run_t", "--tools", TOOLS, "--data-dir", str(data))
    assert result.returncode == 2
    assert "the log has step 'other'" in result.stderr


def test_capability_drift_on_resume(data: Path) -> None:
    _run_loop(data, "--run-id", "run_cd")
    edit_store(data, "DELETE FROM events WHERE run_id = 'run_cd' AND type = 'RunCompleted'",
               "UPDATE runs SET status = 'running' WHERE run_id = 'run_cd'", rechain="run_cd")
    before = run_cli("events", "run_cd", "--data-dir", str(data)).stdout
    # without its tools: refused before anything is written, naming what is missing
    result = run_cli("replay", "run_cd", "--data-dir", str(data), "--json")
    assert result.returncode == 2 and "'improve'" in result.stderr, result.stderr
    assert run_cli("events", "run_cd", "--data-dir", str(data)).stdout == before
    # with other tools of the same names: drift
    other = data.parent / "other_tools.py"
    other.write_text("def _t(args):\n    return {}\n"
                     "tools = {'checkText': _t, 'improve': _t, 'publish': _t}\n")
    result = run_cli("replay", "run_cd", "--data-dir", str(data), "--json", "--tools",
                     f"{other}:tools")
    assert result.returncode == 1
    assert json.loads(result.stdout)["causeCode"] == "capability_drift"
    assert "improve" in result.stderr


def test_input_from_stdin(data: Path) -> None:
    result = run_cli("run", str(EX / "refine-loop.lwir.yaml"), "--input", "-", "--tools", TOOLS,
                     "--data-dir", str(data), "--json", stdin='{"text": "from stdin"}')
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["output"]["text"] == "from stdin!!!"


@pytest.mark.parametrize("bad", ["../../escape", ".hidden", "a/b", "x" * 200, ""])
def test_run_ids_that_would_name_files_outside_are_refused(data: Path, bad: str) -> None:
    result = _run_loop(data, "--run-id", bad)
    assert result.returncode == 2 and "invalid run id" in result.stderr
    assert not (data.parent / "escape.lock").exists()


def test_all_settled_failed_branches_in_events_and_report(data: Path, tmp_path: Path,
                                                          snapshot) -> None:  # type: ignore[no-untyped-def]
    side_effects = ROOT / "tests" / "runtime"
    run_input = tmp_path / "in.json"
    run_input.write_text(json.dumps({"items": [
        {"id": "a", "n": 1}, {"id": "b", "n": 2, "fail": True}, {"id": "c", "n": 3}]}))
    result = run_cli("run", str(side_effects / "workflows" / "fanout-settled.lwir.yaml"),
                     "--input", str(run_input), "--tools",
                     f"{side_effects / 'side_effects.py'}:tools", "--data-dir", str(data),
                     "--run-id", "run_settled", "--json", env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["output"] == [{"id": "a", "double": 2},
                                                   {"id": "c", "double": 6}]
    events = run_cli("events", "run_settled", "--data-dir", str(data), "--type",
                     "StepCompleted").stdout
    failed_lines = [line.strip() for line in events.splitlines() if "failed branch" in line]
    report = run_cli("report", "run_settled", "--data-dir", str(data))
    assert (failed_lines, report.stdout.splitlines()[-2:]) == snapshot
    parsed = json.loads(run_cli("report", "run_settled", "--data-dir", str(data),
                                "--json").stdout)
    assert [b["itemKey"] for b in parsed["failedBranches"]["each"]] == ["b"]


def test_an_edited_artifact_is_reported_with_the_run(data: Path) -> None:
    assert _run_loop(data, "--run-id", "run_edit").returncode == 0
    db = sqlite3.connect(data / "events" / "events.db")
    db.execute("UPDATE artifacts SET data = ?", (b'{"text": "forged", "rounds": 9}',))
    db.commit()
    db.close()
    replay = run_cli("replay", "run_edit", "--data-dir", str(data), "--tools", TOOLS)
    assert replay.returncode == 2 and "forged" not in replay.stdout
    assert replay.stderr.startswith("lwtool: run run_edit: artifact artifact://sha256:")
    assert "is damaged (its content does not match its hash)" in replay.stderr
    # a new run storing the same content repairs it instead of trusting the forged copy
    again = _run_loop(data, "--run-id", "run_new")
    assert again.returncode == 0 and json.loads(again.stdout)["text"].endswith("!!!")
    assert run_cli("replay", "run_edit", "--data-dir", str(data), "--tools",
                   TOOLS).returncode == 0


def test_an_existing_run_id_with_another_input_is_refused(data: Path, tmp_path: Path) -> None:
    assert _run_loop(data, "--run-id", "run_same").returncode == 0
    other = tmp_path / "other.json"
    other.write_text('{"text": "a different text"}')
    again = run_cli("run", str(EX / "refine-loop.lwir.yaml"), "--input", str(other),
                    "--tools", TOOLS, "--data-dir", str(data), "--run-id", "run_same")
    assert again.returncode == 2 and again.stdout == ""
    assert "run run_same exists with another input" in again.stderr


def test_input_edge_cases_are_usage_errors(data: Path, tmp_path: Path) -> None:
    dup = tmp_path / "dup.json"
    dup.write_text('{"text": "a", "text": "b"}')
    result = run_cli("run", str(EX / "refine-loop.lwir.yaml"), "--input", str(dup),
                     "--tools", TOOLS, "--data-dir", str(data))
    assert result.returncode == 2 and "duplicate key 'text'" in result.stderr
    closed = subprocess.run(
        [sys.executable, "-m", "lwtool", "run", str(EX / "refine-loop.lwir.yaml"), "--input",
         "-", "--tools", TOOLS, "--data-dir", str(data)], cwd=ROOT, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=120)
    assert closed.returncode == 2 and "Traceback" not in closed.stderr
    shut = subprocess.run(["bash", "-c", f'"{sys.executable}" -m lwtool run '
                           f'"{EX / "refine-loop.lwir.yaml"}" --input - --data-dir "{data}" <&-'],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert shut.returncode == 2 and "there is no standard input" in shut.stderr
    big = run_cli("run", str(EX / "refine-loop.lwir.yaml"), "--input", "-", "--tools", TOOLS,
                  "--data-dir", str(data), stdin='"' + "x" * (9 * 1024 * 1024) + '"')
    assert big.returncode == 2 and "larger than 8,388,608 bytes" in big.stderr


def test_lone_surrogates_are_findings_and_input_errors(data: Path, tmp_path: Path) -> None:
    workflow = tmp_path / "s.lwir.json"
    workflow.write_text('{"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow", '
                        '"metadata": {"name": "x\\ud800"}, "permissions": {"tools": ["t"]}, '
                        '"steps": [{"id": "a", "uses": "tool.call", "with": {"tool": "t"}}]}')
    for command in ("validate", "hash", "canon"):
        result = run_cli(command, str(workflow))
        assert result.returncode == 1 and "Traceback" not in result.stderr, command
        assert "lwir.not_canonicalizable" in result.stdout + result.stderr
    bad_input = tmp_path / "in.json"
    bad_input.write_text('{"text": "a\\ud800"}')
    run = run_cli("run", str(EX / "refine-loop.lwir.yaml"), "--input", str(bad_input),
                  "--tools", TOOLS, "--data-dir", str(data))
    assert run.returncode == 2 and "lone surrogate" in run.stderr


def test_step_timeout_flag(data: Path, tmp_path: Path) -> None:
    side_effects = ROOT / "tests" / "runtime"
    run_input = tmp_path / "in.json"
    run_input.write_text(json.dumps({"items": [{"id": "a", "n": 1, "sleep": 5}]}))
    common = ["--tools", f"{side_effects / 'side_effects.py'}:tools", "--data-dir", str(data)]
    result = run_cli("run", str(side_effects / "workflows" / "fanout.lwir.yaml"), "--input",
                     str(run_input), *common, "--step-timeout", "0.3", "--json",
                     env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert result.returncode == 1
    payload = json.loads(result.stdout)
    assert payload["causeCode"] == "timeout" and payload["failedStepPath"] == "each[a].work"
    assert run_cli("run", str(side_effects / "workflows" / "fanout.lwir.yaml"), "--input",
                   str(run_input), *common, "--step-timeout", "0").returncode == 2


def test_a_hung_sync_tool_does_not_keep_the_process_alive(data: Path, tmp_path: Path) -> None:
    import time

    side_effects = ROOT / "tests" / "runtime"
    (tmp_path / "in.json").write_text("{}")
    started = time.monotonic()
    result = run_cli("run", str(side_effects / "workflows" / "hang.lwir.yaml"), "--input",
                     str(tmp_path / "in.json"), "--tools",
                     f"{side_effects / 'side_effects.py'}:tools", "--data-dir", str(data),
                     "--step-timeout", "0.5", "--json", env={"LWTOOL_TEST_DIR": str(tmp_path)},
                     timeout=60)
    assert time.monotonic() - started < 30
    assert result.returncode == 1 and json.loads(result.stdout)["causeCode"] == "timeout"


def test_control_characters_from_run_data_are_escaped(data: Path, tmp_path: Path) -> None:
    side_effects = ROOT / "tests" / "runtime"
    run_input = tmp_path / "in.json"
    run_input.write_text(json.dumps({"items": [{"id": "ok", "n": 1},
                                               {"id": "\x1b[2Jevil", "n": 2, "fail": True}]}))
    common = ["--tools", f"{side_effects / 'side_effects.py'}:tools", "--data-dir", str(data)]
    result = run_cli("run", str(side_effects / "workflows" / "fanout-settled.lwir.yaml"),
                     "--input", str(run_input), *common, "--run-id", "run_ctl",
                     env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    events = run_cli("events", "run_ctl", "--data-dir", str(data)).stdout
    report = run_cli("report", "run_ctl", "--data-dir", str(data)).stdout
    for text in (events, report, result.stderr):
        assert "\x1b" not in text
    assert "\\x1b[2Jevil" in events and "\\x1b[2Jevil" in report
    failing = run_cli("run", str(side_effects / "workflows" / "fanout.lwir.yaml"), "--input",
                      str(run_input), *common, env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert failing.returncode == 1 and "\x1b" not in failing.stderr
    assert "\\x1b[2Jevil" in failing.stderr


def test_a_definition_whose_plan_is_a_definition_is_refused(data: Path, tmp_path: Path) -> None:
    definition = tmp_path / "self.definition.yaml"
    definition.write_text("apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\n"
                          "id: selfref\nplanner:\n  plan: self.definition.yaml\n")
    (tmp_path / "in.json").write_text("{}")
    result = run_cli("run", str(definition), "--input", str(tmp_path / "in.json"),
                     "--data-dir", str(data))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "must name an LWIR file (kind: Workflow)" in result.stderr
    found = run_cli("validate", str(definition))
    assert found.returncode == 1
    assert found.stdout == (f"{definition}:5:9: error definition.plan_is_itself planner.plan "
                            "'self.definition.yaml' is this definition itself; it must name "
                            "an LWIR file (kind: Workflow) [lwtool explain "
                            "definition.plan_is_itself]\n")


@pytest.mark.parametrize("as_json", [True, False])
def test_stdout_holds_only_the_output(data: Path, tmp_path: Path, as_json: bool) -> None:
    side_effects = ROOT / "tests" / "runtime"
    (tmp_path / "in.json").write_text("{}")
    result = run_cli("run", str(side_effects / "workflows" / "chatty.lwir.yaml"), "--input",
                     str(tmp_path / "in.json"), "--tools",
                     f"{side_effects / 'side_effects.py'}:tools", "--data-dir", str(data),
                     *(["--json"] if as_json else []), env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    parsed = json.loads(result.stdout)  # one document, nothing else
    assert (parsed["output"] if as_json else parsed) == {"said": "hi"}
    assert "hello from a tool" in result.stderr and "raw bytes on fd 1" in result.stderr


def _sigterm_caught(pid: int) -> bool:
    """Whether the process catches SIGTERM (lwtool.cli.entry has run its guard)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (15 - 1) & 1)
    return False


@pytest.mark.parametrize("sig", [2, 15])
def test_a_signal_while_lwtool_starts_is_one_line_never_a_traceback(data: Path,
                                                                    sig: int) -> None:
    """From the moment lwtool's own code runs (its first act is to catch the signals),
    Ctrl-C or SIGTERM during the ~150 ms of imports, argument parsing and run set-up
    prints one line and exits 130 / 143 (typer used to turn it into a silent 130)."""
    import signal as signals
    import time

    previous = signals.signal(signals.SIGINT, signals.default_int_handler)  # not inherited
    try:
        for delay in (0, 0.01, 0.03, 0.06, 0.1, 0.15):
            proc = subprocess.Popen(
                [sys.executable, "-m", "lwtool", "run", str(EX / "refine-loop.lwir.yaml"),
                 "--input", str(EX / "inputs" / "refine-loop.json"), "--tools", TOOLS,
                 "--data-dir", str(data)], cwd=ROOT, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 30
            while not _sigterm_caught(proc.pid):
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.001)
            time.sleep(delay)
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
            assert "Traceback" not in err, (delay, err)
            if proc.returncode != 0:  # 0: it finished first
                assert proc.returncode == 128 + sig, (delay, proc.returncode, err)
                word = "interrupted" if sig == 2 else "terminated"
                assert err.splitlines()[-1].startswith("lwtool: ") and word in err, err
    finally:
        signals.signal(signals.SIGINT, previous)
