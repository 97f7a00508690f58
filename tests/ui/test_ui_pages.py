"""The inspector's pages over real runs (Starlette's test client): what each page shows,
paged artifacts, filters, refusals, and that serving never writes to the data dir."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from lwtool.ui.app import create_app
from lwtool.ui.layout import svg
from lwtool.world.base import NewEvent, StoreUnavailable
from lwtool.world.local import LocalWorld
from tests.conftest import ROOT, edit_store, run_cli


@pytest.fixture()
def client(demo_dir: Path) -> Iterator[TestClient]:
    world = LocalWorld(demo_dir, read_only=True)
    with TestClient(create_app(world), base_url="http://127.0.0.1") as test_client:
        yield test_client
    world.close()


def _files(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()
            and p.name not in ("events.db-wal", "events.db-shm")}


def test_runs_list_shows_every_run_with_status_and_filters(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    text = page.text
    for run_id, status in [("demo-review", "completed"), ("demo-loop", "completed"),
                           ("broken", "failed"), ("big", "completed"), ("cut", "interrupted")]:
        row = re.search(rf'<tr class="{status}"><td><a href="/runs/{run_id}">', text)
        assert row, (run_id, status)
    assert "unpriced" in text  # demo-review's offline model calls
    failed = client.get("/?status=failed").text
    assert 'href="/runs/broken"' in failed and 'href="/runs/demo-loop"' not in failed
    # an interrupted run (marked running, no process) is counted and filtered as such
    assert re.search(r'<option value="interrupted" >interrupted \(1\)</option>', text)
    assert re.search(r'<option value="running" >running \(0\)</option>', text)
    stopped = client.get("/?status=interrupted").text
    assert 'href="/runs/cut"' in stopped and 'href="/runs/broken"' not in stopped
    assert 'href="/runs/cut"' not in client.get("/?status=running").text
    found = client.get("/?q=demo").text
    assert found.count('href="/runs/demo-') == 2 and 'href="/runs/big"' not in found
    assert "No runs match" in client.get("/?q=nothing-like-this").text


def test_run_page_graph_timeline_attempts_and_events(client: TestClient) -> None:
    page = client.get("/runs/demo-review")
    assert page.status_code == 200
    text = page.text
    statuses = re.findall(r'<g class="node [^"]*" data-pointer="([^"]+)" data-status="(\w+)"',
                          text)
    assert [s for _, s in statuses] == ["done"] * 4, statuses
    assert "review-cands · parallel, ≤25 branches, 5 at once, all_settled" in text
    lanes = re.findall(r'<span class="lane-name mono" title="([^"]+)"', text)
    assert lanes == ["run", "review-cands[cand_001]", "review-cands[cand_002]",
                     "review-cands[cand_003]"]
    assert text.count('<tr id="attempt-') == 10
    assert "429 in · 237 out" in text
    assert re.search(r"RunCompleted <small>1</small>", text)
    only = client.get("/runs/demo-review?type=RunCompleted").text
    assert only.count("<td class=\"mono\">RunCompleted</td>") == 1
    assert "<td class=\"mono\">StepCompleted</td>" not in only


def test_a_failed_and_an_interrupted_run(client: TestClient) -> None:
    broken = client.get("/runs/broken").text
    assert "Failed: step_failed at" in broken and "item b is broken" in broken
    assert re.search(r'data-status="failed"', broken)
    cut = client.get("/runs/cut").text
    assert 'id="run-status">interrupted' in cut and "lwtool replay cut" in cut
    assert "data-live" not in cut  # nothing to follow


def test_an_attempt_its_process_died_in_is_interrupted_not_running(
        client: TestClient) -> None:
    page = client.get("/runs/resumed").text
    rows = re.findall(r'<tr id="attempt-\d+" class="(\w+)"><td class="mono"><a [^>]*>(\w+)</a>',
                      page)
    assert rows == [("done", "a"), ("interrupted", "b"), ("done", "b")], rows
    assert 'class="running"' not in page


def test_attempt_page_shows_input_output_prompt_and_response(client: TestClient) -> None:
    path = "review-cands[cand_001].worker.visit[0]"
    page = client.get(f"/runs/demo-review/step?path={quote(path)}&attempt=1")
    assert page.status_code == 200
    text = page.text
    assert "&#34;id&#34;: &#34;cand_001&#34;" in text  # the recorded input
    assert "Prompt" in text and "You assess candidates against a job requirement" in text
    assert "Response" in text and "offline answer: Assess Ten years of Python" in text
    assert text.count('href="/artifacts/sha256/') == 3  # the output and two artifacts
    labels = re.findall(r'<li><a href="/artifacts/sha256/[0-9a-f]{64}">([^<]+)</a>', text)
    assert labels == ["prompt (the messages sent)", "model reply (raw text)"]
    tool = client.get(f"/runs/broken/step?path={quote('each[b].work')}&attempt=1").text
    assert "step_failed: tool &#39;work&#39; raised RuntimeError: item b is broken" in tool
    missing = client.get("/runs/demo-review/step?path=nope&attempt=1")
    assert missing.status_code == 404 and "no attempt 1 of a step at &#39;nope&#39;" in \
        missing.text


def test_large_artifacts_are_paged(client: TestClient) -> None:
    step = client.get("/runs/big/step?path=make&attempt=1").text
    ref = re.search(r'Stored as <a class="mono" href="(/artifacts/sha256/[0-9a-f]{64})"', step)
    assert ref is not None
    first = client.get(ref.group(1)).text
    assert "bytes 0–65536" in first and "a page of 65,536" in first
    assert "line 000000 of a large tool output" in first
    assert "line 011999" not in first
    later = re.search(r'href="\?offset=(\d+)">next page', first)
    assert later is not None and later.group(1) == "65536"
    second = client.get(f"{ref.group(1)}?offset=65536").text
    assert "previous page" in second and "line 000000 of" not in second
    publish = client.get("/runs/demo-loop/step?path=publish&attempt=1").text
    small = re.findall(r'href="(/artifacts/sha256/[0-9a-f]{64})"', publish)[0]
    assert "checked against its address" in client.get(small).text


def test_version_page_has_lwir_hash_and_lock(client: TestClient) -> None:
    run = client.get("/runs/demo-loop").text
    version = re.search(r'href="/versions/(sha256:[0-9a-f]{64})"', run)
    assert version is not None
    page = client.get(f"/versions/{version.group(1)}").text
    assert "matches" in page and version.group(1) in page
    assert "apiVersion: littleworkflow.dev/v0.1" in page
    # as a person writes LWIR (apiVersion, kind, metadata ... steps), not sorted keys
    text = page[page.index("apiVersion: littleworkflow"):]
    assert text.index("kind: Workflow") < text.index("metadata:") < text.index("input:")
    assert text.index("- id: improve") < text.index("uses: tool.call") < text.index(
        "maxVisits: 4")  # sorted keys would put input before kind, maxVisits before uses
    assert "&#34;kind&#34;: &#34;WorkflowVersionLock&#34;" in page
    assert 'href="/runs/demo-loop"' in page
    # its record: validated by this lwtool, the snapshot's hash and each tool's pin
    assert re.search(r"by lwtool [0-9.]+ on \d{4}-.*valid</span> · 0 findings", page), page
    assert re.search(r'<dt>Capability snapshot</dt><dd class="mono">sha256:[0-9a-f]{64}', page)
    assert re.search(r'<td><code>improve</code></td><td class="mono">sha256:[0-9a-f]{64}',
                     page), page


def test_refusals_are_pages_with_a_reason(client: TestClient) -> None:
    assert client.get("/runs/nope").status_code == 404
    assert client.get("/versions/sha256:0000").status_code == 404
    bad = client.get("/artifacts/sha256/not-hex")
    assert bad.status_code == 404 and "not an artifact address" in bad.text
    gone = client.get("/artifacts/sha256/" + "0" * 64)
    assert gone.status_code == 404 and "is missing" in gone.text


def test_huge_page_and_offset_numbers_are_pages_not_errors(client: TestClient) -> None:
    """They were a 500 with an OverflowError (SQLite takes at most 64-bit numbers)."""
    huge = "9" * 40
    for url in [f"/?page={huge}", f"/runs/demo-loop?offset={huge}",
                f"/runs/demo-loop?attempts={huge}", f"/runs/demo-loop/events/{huge}",
                f"/runs/big/step?path=make&attempt={huge}"]:
        answer = client.get(url)
        assert answer.status_code in (200, 404), (url, answer.status_code)
    step = client.get("/runs/big/step?path=make&attempt=1").text
    ref = re.search(r'Stored as <a class="mono" href="(/artifacts/sha256/[0-9a-f]{64})"', step)
    assert ref is not None
    assert client.get(f"{ref.group(1)}?offset={huge}").status_code in (200, 404)


def test_serving_never_writes_to_the_data_dir(demo_dir: Path, client: TestClient) -> None:
    before = _files(demo_dir)
    for url in ["/", "/runs/demo-review", "/runs/cut", "/runs/big/step?path=make&attempt=1",
                "/?status=failed", "/runs/broken?type=StepAttemptFailed"]:
        assert client.get(url).status_code == 200
    assert _files(demo_dir) == before


def test_a_read_only_world_needs_an_existing_store_and_refuses_writes(
        tmp_path: Path, demo_dir: Path) -> None:
    with pytest.raises(StoreUnavailable, match="no lwtool data"):
        LocalWorld(tmp_path / "none", read_only=True)
    assert not (tmp_path / "none").exists()
    world = LocalWorld(demo_dir, read_only=True)
    with pytest.raises(StoreUnavailable, match="was opened read-only"):
        world.append("demo-loop", [NewEvent("RunCompleted", {})])
    world.close()


def test_the_layout_of_a_loop_has_a_dashed_back_edge(demo_dir: Path) -> None:
    from lwtool.graph import build
    from lwtool.source.loader import load_text
    from lwtool.validate.context import Context
    from tests.conftest import ROOT

    text = (ROOT / "examples" / "refine-loop.lwir.yaml").read_text()
    drawn = svg(build(Context(load_text(text, "refine-loop.lwir.yaml"), "Workflow")))
    assert drawn.count('<g class="edge back">') == 1
    assert drawn.count('<g class="node ') == 4 and 'data-status="pending"' in drawn


def test_a_harness_session_shows_its_calls_and_subject(client: TestClient) -> None:
    page = client.get("/runs/chat").text
    calls = re.findall(r'<td class="mono">(session#[^<]+)</td><td>(\w+)</td>', page)
    assert calls == [("session#0", "model"), ("session#0.0", "tool"), ("session#1", "model")]
    assert "Calls outside steps" in page and "svg" not in page.split("Calls outside")[0]
    version = re.search(r'href="/versions/(sha256:[0-9a-f]{64})"', page)
    assert version is not None
    subject = client.get(f"/versions/{version.group(1)}").text
    assert "Not an LWIR workflow" in subject and "WorkflowVersionLock" not in subject
    assert "Capability snapshot" not in subject and "<dt>Record" not in subject
    assert "matches" in subject


def test_damage_is_a_page_that_names_it_and_spares_the_rest(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for run_id in ("good", "edited", "garbled"):
        ran = run_cli("run", "examples/refine-loop.lwir.yaml", "--input",
                      "examples/inputs/refine-loop.json", "--tools",
                      "examples/tools.py:tools", "--data-dir", str(data), "--run-id", run_id)
        assert ran.returncode == 0, ran.stderr
    edit_store(data, "UPDATE events SET payload = replace(payload, 'tool.call', 'tool.cal1') "
               "WHERE run_id = 'edited'", "UPDATE runs SET input = '{broken' "
               "WHERE run_id = 'garbled'", rechain=None)
    world = LocalWorld(data, read_only=True)
    with TestClient(create_app(world), base_url="http://127.0.0.1",
                    raise_server_exceptions=False) as client:
        listed = client.get("/")
        assert listed.status_code == 200  # a damaged run still lists
        assert all(f'href="/runs/{r}"' in listed.text for r in ("good", "edited", "garbled"))
        edited = client.get("/runs/edited")
        assert edited.status_code == 500 and "the event log is damaged" in edited.text
        garbled = client.get("/runs/garbled")
        assert garbled.status_code == 500 and "damaged" in garbled.text
        assert client.get("/runs/good").status_code == 200
    world.close()


def test_only_local_host_names_and_hardened_headers(client: TestClient) -> None:
    rebound = client.get("/", headers={"host": "attacker.example:8765"})
    assert rebound.status_code == 400  # a DNS name rebound to 127.0.0.1 gets nothing
    assert "demo-review" not in rebound.text
    for host in ("127.0.0.1:8765", "localhost:8765"):
        assert client.get("/", headers={"host": host}).status_code == 200
    page = client.get("/runs/demo-review")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"


def test_an_artifact_file_replaced_by_a_link_or_a_fifo_is_damage(demo_dir: Path,
                                                                 tmp_path: Path) -> None:
    import os
    import shutil

    data = tmp_path / "data"
    shutil.copytree(demo_dir, data)
    world = LocalWorld(data, read_only=True)
    with TestClient(create_app(world), base_url="http://127.0.0.1",
                    raise_server_exceptions=False) as client:
        step = client.get("/runs/big/step?path=make&attempt=1").text
        found = re.search(r'Stored as <a class="mono" href="(/artifacts/sha256/([0-9a-f]{64}))"',
                          step)
        assert found is not None
        url, digest = found.groups()
        stored = data / "artifacts" / "sha256" / digest[:2] / digest
        assert client.get(url).status_code == 200
        outside = tmp_path / "elsewhere"
        outside.write_bytes(stored.read_bytes())
        stored.unlink()
        stored.symlink_to(outside)
        linked = client.get(url)
        assert linked.status_code == 500 and "is not a regular file" in linked.text
        stored.unlink()
        os.mkfifo(stored)  # must not block the server
        piped = client.get(url)
        assert piped.status_code == 500 and "is not a regular file" in piped.text
    world.close()


APPROVE = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: approve}
steps:
  - id: ask
    uses: human.input
    with: {prompt: "Ship {{ input.what }}?", schema: {type: boolean}}
"""


def test_a_waiting_run_shows_what_it_waits_for(tmp_path: Path) -> None:
    (tmp_path / "approve.lwir.yaml").write_text(APPROVE)
    (tmp_path / "in.json").write_text('{"what": "v2"}')
    waits = run_cli("run", "approve.lwir.yaml", "-i", "in.json", "--run-id", "w",
                    "--data-dir", "data", cwd=tmp_path)
    assert waits.returncode == 3, waits.stderr
    world = LocalWorld(tmp_path / "data", read_only=True)
    try:
        with TestClient(create_app(world), base_url="http://127.0.0.1") as client:
            listed = client.get("/?status=waiting").text
            assert re.search(r'<option value="waiting" selected>waiting \(1\)</option>', listed)
            assert '<tr class="waiting"><td><a href="/runs/w">' in listed
            page = client.get("/runs/w").text
            assert 'id="run-status">waiting' in page
            assert "Waiting for a person at <span class=\"mono\">ask</span>: Ship v2?" in page
            assert "lwtool respond w ask --input FILE --resume" in page
            assert 'data-status="waiting"' in page
    finally:
        world.close()


def test_an_executing_run_shows_what_it_asks_meanwhile(tmp_path: Path) -> None:
    """A run that asked and goes on executing (here: killed after asking, its lock then
    held by this process, as its executor would): the request and the respond command
    without --resume (the run takes the answer itself)."""
    (tmp_path / "approve.lwir.yaml").write_text(APPROVE)
    (tmp_path / "in.json").write_text('{"what": "v3"}')
    killed = run_cli("run", "approve.lwir.yaml", "-i", "in.json", "--run-id", "x",
                     "--data-dir", "data", cwd=tmp_path,
                     env={"LWTOOL_FAULT_KILL_AFTER": "HumanInputRequested@ask"})
    assert killed.returncode == -9, killed.stderr
    holder = LocalWorld(tmp_path / "data")
    world = LocalWorld(tmp_path / "data", read_only=True)
    try:
        with holder.lock_run("x"), \
                TestClient(create_app(world), base_url="http://127.0.0.1") as client:
            page = client.get("/runs/x").text
            assert 'id="run-status">running' in page
            assert "Waiting for a person at <span class=\"mono\">ask</span>: Ship v3?" in page
            assert "takes the answer: <code>lwtool respond x ask --input FILE</code>" in page
    finally:
        world.close()
        holder.close()


def test_a_pipeline_run_shows_its_sub_runs_and_the_list_groups_them(tmp_path: Path) -> None:
    """The pipeline page: its name, `N of M sub-runs completed` (not "0 of 0 steps"),
    each sub-run linked with its workflow and status; a sub-run's page links back; the
    runs list puts each sub-run under its pipeline run."""
    pipeline = ROOT / "examples" / "pipeline"
    done = run_cli("orchestrate", str(pipeline / "numbers.pipeline.yaml"), "-i",
                   str(pipeline / "input.json"), "--offline", "--tools",
                   f"{pipeline / 'tools.py'}:tools", "--data-dir", str(tmp_path / "data"),
                   "--run-id", "p", "-q")
    assert done.returncode == 0, done.stderr
    world = LocalWorld(tmp_path / "data", read_only=True)
    try:
        with TestClient(create_app(world), base_url="http://127.0.0.1") as client:
            page = client.get("/runs/p").text
            assert "<dd>numbers ·" in page and "0 of 0 steps" not in page
            assert '<span id="sub-runs-done">3</span> of 3 sub-runs completed' in page
            assert page.count('<a class="mono sub-run" href="/runs/p.sub.1.') == 3
            assert 'p.sub.1.2</a> double <span class="badge completed">' in page
            sub = client.get("/runs/p.sub.1.0").text
            assert '<a class="mono" id="parent-run" href="/runs/p">p</a>' in sub
            listed = client.get("/").text
            rows = re.findall(r'<tr class="([a-z ]+)"><td>(?:<span class="tree">└ </span>)?'
                              r'<a href="/runs/([^"]+)">', listed)
            at = [run for _, run in rows].index("p")
            assert sorted(rows[at + 1: at + 4]) == [("completed child", f"p.sub.1.{n}")
                                                    for n in (0, 1, 2)], rows
            assert "<td>numbers</td>" in listed and "<td>double</td>" in listed
    finally:
        world.close()
