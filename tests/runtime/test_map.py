"""The map step through real `lwtool` processes: items cut into fixed shards, each a
child run of the shard workflow; tolerated failures counted per item; a tree reduce;
duplicate keys refused before any shard starts; the parent's log holds a record a shard,
never an event an item; and a SIGKILL at chosen points (after some shards, inside the
reduce) replays to the uninterrupted run's output with no completed shard or reduce
node run again."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli

FIXTURES = ROOT / "tests" / "fixtures" / "map"


def _flow(folder: Path, **settings: Any) -> Path:
    for name in ("shard.lwir.yaml", "merge.lwir.yaml", "tools.py"):
        shutil.copy(FIXTURES / name, folder / name)
    with_ = {"items": "{{ input.tickets }}", "itemKey": "{{ item.id }}",
             "workflow": "./shard.lwir.yaml", "batch": {"maxItems": 3},
             "maxConcurrency": 2, **settings}
    path = folder / "flow.lwir.json"
    path.write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "score-all"}, "permissions": {"tools": ["score", "merge"]},
        "steps": [{"id": "all", "uses": "map", "with": with_}]}))
    return path


def _input(folder: Path, count: int, bad: tuple[int, ...] = ()) -> None:
    tickets = [{"id": f"t{i}", **({"bad": True} if i in bad else {})} for i in range(count)]
    (folder / "in.json").write_text(json.dumps({"tickets": tickets}))


def _run(folder: Path, run_id: str, env: dict[str, str] | None = None) -> Any:
    return run_cli("run", "flow.lwir.json", "-i", "in.json", "--tools", "tools.py:tools",
                   "--data-dir", "d", "--run-id", run_id, "--json", "-q", cwd=folder, env=env)


def _calls(folder: Path) -> Counter[str]:
    log = folder / "calls.log"
    return Counter(log.read_text().splitlines()) if log.exists() else Counter()


def _events(folder: Path, run_id: str) -> list[dict[str, Any]]:
    out = run_cli("events", run_id, "--json", "--data-dir", "d", cwd=folder).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_shards_with_a_tolerated_failure_and_no_reduce(tmp_path: Path) -> None:
    _flow(tmp_path, toleratedFailure={"count": 3})
    _input(tmp_path, 10, bad=(4,))
    done = _run(tmp_path, "m1")
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["output"]
    assert [[i["id"] for i in shard] for shard in output["results"]] == [
        ["t0", "t1", "t2"], ["t6", "t7", "t8"], ["t9"]]
    assert output["failed"] == [{"key": k, "cause": "step_failed", "shard": 1}
                                for k in ("t3", "t4", "t5")]
    events = _events(tmp_path, "m1")
    shards = [e["payload"] for e in events if e["type"] == "MapShardEnded"]
    assert sorted((s["shard"], s["items"], s["status"]) for s in shards) == [
        (0, 3, "completed"), (1, 3, "failed"), (2, 3, "completed"), (3, 1, "completed")]
    assert not [e for e in events if e["type"] == "StepAttemptStarted"
                and e["stepPath"] != "all"]  # no event an item in the parent's log
    runs = json.loads(run_cli("runs", "--json", "--data-dir", "d", cwd=tmp_path).stdout)
    assert sorted(r["runId"] for r in runs if r["parentRunId"] == "m1") == sorted(
        s["childRunId"] for s in shards)
    listed = run_cli("runs", "--data-dir", "d", cwd=tmp_path).stdout.splitlines()
    assert listed[2:] == ["  map all: 4 shards (3 completed, 1 failed)"], listed  # a line
    _shown_as_one_step(tmp_path, "m1", [s["childRunId"] for s in sorted(
        shards, key=lambda s: s["shard"])])


def _shown_as_one_step(folder: Path, run_id: str, shard_runs: list[str]) -> None:
    """The inspector's run page and the OTel export show the map as one step with its
    shards counted and a link to each shard's run."""
    from starlette.testclient import TestClient

    from lwtool.ui.app import create_app
    from lwtool.world.local import LocalWorld

    world = LocalWorld(folder / "d", read_only=True)
    try:
        with TestClient(create_app(world), base_url="http://127.0.0.1") as client:
            page = client.get(f"/runs/{run_id}").text
    finally:
        world.close()
    assert "4 shards (3 completed, 1 failed), 10 items" in page
    assert [m for m in shard_runs if f'href="/runs/{m}"' not in page] == []
    done = run_cli("export-otel", run_id, "--file", "otel.json", "--data-dir", "d",
                   cwd=folder)
    assert done.returncode == 0, done.stderr
    spans = [span for resource in json.loads((folder / "otel.json").read_text())[
        "resourceSpans"] for scope in resource["scopeSpans"] for span in scope["spans"]]
    step = next(span for span in spans if any(
        a["key"] == "lwtool.step.uses" and a["value"].get("stringValue") == "map"
        for a in span["attributes"]))
    attributes = {a["key"]: a["value"] for a in step["attributes"]}
    assert attributes["lwtool.map.shards"] == {"intValue": "4"}
    assert attributes["lwtool.map.shards.failed"] == {"intValue": "1"}
    assert [v["stringValue"] for v in attributes["lwtool.map.shard_run_ids"][
        "arrayValue"]["values"]] == shard_runs


@pytest.mark.parametrize(("tolerance", "tolerated"), [({"count": 2}, 2), ({"percent": 25}, 2),
                                                      (None, 0)])
def test_failures_over_the_tolerance_fail_the_step_naming_the_items(
        tmp_path: Path, tolerance: Any, tolerated: int) -> None:
    _flow(tmp_path, **({"toleratedFailure": tolerance} if tolerance else {}))
    _input(tmp_path, 10, bad=(4,))
    done = _run(tmp_path, "m2")
    assert done.returncode == 1, done.stderr
    failure = json.loads(done.stdout)
    assert failure["causeCode"] == "map_tolerance_exceeded"
    assert f"3 of 10 items failed, over the {tolerated} tolerated: t3, t4, t5" in \
        failure["message"]


def test_duplicate_keys_are_refused_before_any_shard_starts(tmp_path: Path) -> None:
    _flow(tmp_path)
    (tmp_path / "in.json").write_text(json.dumps({"tickets": [{"id": "a"}, {"id": "b"},
                                                              {"id": "a"}]}))
    done = _run(tmp_path, "m3")
    assert done.returncode == 1
    assert "items 0 and 2 the same key 'a'" in json.loads(done.stdout)["message"]
    assert _calls(tmp_path) == Counter()
    runs = json.loads(run_cli("runs", "--json", "--data-dir", "d", cwd=tmp_path).stdout)
    assert [r["runId"] for r in runs] == ["m3"]


def test_a_tree_reduce_gives_the_roots_output(tmp_path: Path) -> None:
    _flow(tmp_path, toleratedFailure={"percent": 50},
          reduce={"workflow": "./merge.lwir.yaml", "arity": 2})
    _input(tmp_path, 10, bad=(4,))
    done = _run(tmp_path, "m4")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"total": 14}
    # 3 completed shards -> 2 nodes (2 + 1 outputs) -> 1 root
    assert _calls(tmp_path)["merge 2"] == 2 and _calls(tmp_path)["merge 1"] == 1


# each run's own count: the parent's second shard record; a reduce node's merge step
@pytest.mark.parametrize("kill_after", ["MapShardEnded@all#2", "StepCompleted@m"],
                         ids=["after-two-shards", "inside-the-reduce"])
def test_a_killed_map_replays_only_what_had_not_completed(tmp_path: Path,
                                                          kill_after: str) -> None:
    _flow(tmp_path, toleratedFailure={"count": 3}, maxConcurrency=1,
          reduce={"workflow": "./merge.lwir.yaml", "arity": 2})
    _input(tmp_path, 12, bad=(4,))
    killed = _run(tmp_path, "k1", env={"LWTOOL_FAULT_KILL_AFTER": kill_after})
    assert killed.returncode == -9, killed.stderr
    before = _calls(tmp_path)
    again = run_cli("replay", "k1", "--tools", "tools.py:tools", "--data-dir", "d", "--json",
                    cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    calls = _calls(tmp_path)
    # every item scored once, the failed shard's too (its failure stands), and each of
    # the 3 reduce nodes (3 completed shards: 2 + 1, then the root) merged once: a call
    # in flight at the kill is the only one made twice
    scores = Counter({k: n for k, n in calls.items() if k.startswith("score")})
    assert sum((scores - Counter(set(scores))).values()) <= 1, calls
    merges = sum(n for k, n in calls.items() if k.startswith("merge"))
    assert merges in (3, 4), calls  # 4: the other node's merge, in flight at the kill
    assert before != calls  # the replay did run what was left
    (tmp_path / "calls.log").unlink()
    clean = _run(tmp_path, "k2")
    assert json.loads(again.stdout)["output"] == json.loads(clean.stdout)["output"] == {
        "total": 20}


def test_the_readme_example_over_a_json_lines_file_with_a_kill_and_a_replay(
        tmp_path: Path) -> None:
    """examples/map: 1,000 tickets of a JSON-lines file, 20 shards of 50, one ticket that
    cannot be scored (its shard's 50 items tolerated), a tree of 3 reduce nodes; killed
    after its fifth shard, the replay prints the uninterrupted run's output."""
    args = ["run", "examples/map/score-all.lwir.yaml", "-i", "examples/inputs/score-all.json",
            "--tools", "examples/map/tools.py:tools", "--json", "-q"]
    clean = run_cli(*args, "--data-dir", str(tmp_path / "a"))
    assert clean.returncode == 0, clean.stderr
    output = json.loads(clean.stdout)["output"]
    assert output["count"] == 950  # T0421's shard failed, within the 10% tolerated
    killed = run_cli(*args, "--data-dir", str(tmp_path / "b"), "--run-id", "k",
                     env={"LWTOOL_FAULT_KILL_AFTER": "MapShardEnded@score-all#5"})
    assert killed.returncode == -9, killed.stderr
    again = run_cli("replay", "k", "--tools", "examples/map/tools.py:tools", "--json",
                    "--data-dir", str(tmp_path / "b"))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["output"] == output
    runs = json.loads(run_cli("runs", "--json", "--data-dir", str(tmp_path / "b")).stdout)
    assert len([r for r in runs if r["parentRunId"] == "k"]) == 23  # one run a shard, a node


def test_retry_runs_the_failed_shards_again_and_only_them(tmp_path: Path) -> None:
    """Over the tolerance the run fails; once the tool is fixed, `lwtool retry` runs the
    failed shard again (a replay alone would not: its failure stands) and no other."""
    _flow(tmp_path)
    _input(tmp_path, 9, bad=(4,))
    failed = _run(tmp_path, "r1")
    assert json.loads(failed.stdout)["causeCode"] == "map_tolerance_exceeded"
    # the third shard ran in the first run only if it started before the second failed
    # (no shard starts after): the retry runs exactly the shards that did not complete
    ended = {e["payload"]["shard"]: e["payload"]["status"] for e in _events(tmp_path, "r1")
             if e["type"] == "MapShardEnded"}
    replayed = run_cli("replay", "r1", "--tools", "tools.py:tools", "--data-dir", "d",
                       "--json", cwd=tmp_path)
    assert json.loads(replayed.stdout)["causeCode"] == "map_tolerance_exceeded"
    (tmp_path / "fixed").touch()
    before = _calls(tmp_path)
    retried = run_cli("retry", "r1", "--tools", "tools.py:tools", "--data-dir", "d",
                      "--json", cwd=tmp_path)
    assert retried.returncode == 0, retried.stderr
    output = json.loads(retried.stdout)["output"]
    assert [len(shard) for shard in output["results"]] == [3, 3, 3] and output["failed"] == []
    # (the failed shard's own retry keeps t3, completed before t4 failed)
    rerun = {"t4", "t5"} | ({"t6", "t7", "t8"} if ended.get(2) != "completed" else set())
    expected = Counter(f"score {key}" for key in rerun)
    assert _calls(tmp_path) - before == expected, ended
