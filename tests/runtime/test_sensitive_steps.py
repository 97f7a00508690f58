"""`sensitive: true` through real `lwtool` processes: a sensitive step's input, output,
prompt, reply and tool calls are never inline in an event (sealed artifacts, keyed
hashes); `events`, `report`, `export-otel`, `runs` and the inspector show none of them;
later steps and a replay after a SIGKILL still get the values; `lwtool reveal` reads one
back and records that it did."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

VALUE = "tok-ann-SENSITIVEVALUE-77"
FLOW = {
    "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
    "metadata": {"name": "sensitive"},
    "permissions": {"tools": ["get_credential", "login"], "models": ["writer"]},
    "steps": [
        {"id": "fetch", "uses": "tool.call", "sensitive": True,
         "with": {"tool": "get_credential", "args": {"user": "{{ input.user }}"}}},
        {"id": "use", "uses": "tool.call", "needs": ["fetch"], "sensitive": True,
         "with": {"tool": "login", "args": {"token": "{{ steps.fetch.output.token }}"}}},
        {"id": "notes", "uses": "ai.generate", "needs": ["use"], "sensitive": True,
         "with": {"model": "writer", "prompt": "Who logged in: {{ steps.use.output.who }}"}},
        {"id": "plain", "uses": "tool.call", "needs": ["notes"],
         "with": {"tool": "login", "args": {"token": "not-sensitive-marker-31"}}},
    ]}
TOOLS = f"""\
from pathlib import Path

def get_credential(args):
    Path("calls").open("a").write("get_credential\\n")
    return {{"token": "{VALUE}"}}

def login(args):
    Path("calls").open("a").write("login\\n")
    return {{"who": "user with " + args["token"]}}

tools = {{"get_credential": get_credential, "login": login}}
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "flow.lwir.json").write_text(json.dumps(FLOW))
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "in.json").write_text('{"user": "ann"}')
    return tmp_path


def _run(folder: Path, run_id: str, env: dict[str, str] | None = None) -> Any:
    return run_cli("run", "flow.lwir.json", "-i", "in.json", "--tools", "tools.py:tools",
                   "--data-dir", "data", "--offline", "--run-id", run_id, "-q", "--json",
                   cwd=folder, env=env)


def _events(folder: Path, run_id: str, env: dict[str, str] | None = None
            ) -> list[dict[str, Any]]:
    out = run_cli("events", run_id, "--json", "--data-dir", "data", cwd=folder,
                  env=env).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_sensitive_values_are_never_inline_and_later_steps_still_get_them(
        folder: Path) -> None:
    done = _run(folder, "s1")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"who": "user with not-sensitive-marker-31"}
    events = _events(folder, "s1")
    text = json.dumps(events)
    assert "not-sensitive-marker-31" in text  # the plain step's values are there
    assert "SENSITIVEVALUE" not in text and "Who logged in" not in text
    started = next(e for e in events if e["type"] == "StepAttemptStarted"
                   and e["stepPath"] == "use")["payload"]
    assert started["sensitive"] is True and "input" not in started
    plain_hash = "sha256:" + hashlib.sha256(json.dumps(
        {"token": VALUE}, separators=(",", ":")).encode()).hexdigest()
    assert started["inputHash"] != plain_hash  # keyed: not brute-forced from the log
    completed = {e["stepPath"]: e["payload"]["envelope"] for e in events
                 if e["type"] == "StepCompleted"}
    assert completed["fetch"]["sensitive"] is True and "output" not in completed["fetch"]
    reply = next(e for e in events if e["type"] == "harness.model.responded")["payload"]
    assert set(reply["response"]) == {"usage", "replyRef"}
    exports = []
    for command in (["report", "s1", "--json"], ["export-otel", "s1", "--file", "o.json"],
                    ["runs", "--json"]):
        shown = run_cli(*command, "--data-dir", "data", cwd=folder)
        assert shown.returncode == 0, shown.stderr
        exports.append(shown.stdout)
    exports.append((folder / "o.json").read_text())
    assert "SENSITIVEVALUE" not in "".join(exports)
    _inspector_shows_placeholders(folder, events)


def _inspector_shows_placeholders(folder: Path, events: list[dict[str, Any]]) -> None:
    from starlette.testclient import TestClient

    from lwtool.record.sensitive import PLACEHOLDER
    from lwtool.ui.app import create_app
    from lwtool.world.local import LocalWorld

    refs = {ref for e in events for ref in json.dumps(e["payload"]).split('"')
            if ref.startswith("artifact://sha256:")}
    world = LocalWorld(folder / "data", read_only=True)
    pages = []
    with TestClient(create_app(world), base_url="http://127.0.0.1") as client:
        pages.append(client.get("/runs/s1").text)
        for path in ("fetch", "use", "notes", "plain"):
            pages.append(client.get("/runs/s1/step", params={"path": path}).text)
        for ref in sorted(refs):
            pages.append(client.get("/artifacts/sha256/"
                                    + ref.removeprefix("artifact://sha256:")).text)
    world.close()
    shown = "".join(pages)
    assert "not-sensitive-marker-31" in shown and PLACEHOLDER.split(";")[0] in shown
    assert "SENSITIVEVALUE" not in shown


def test_a_replay_after_a_kill_reads_sensitive_values_back(folder: Path) -> None:
    killed = _run(folder, "s2", env={"LWTOOL_FAULT_KILL_AFTER": "harness.model.responded@notes"})
    assert killed.returncode == -9, killed.stderr
    assert (folder / "calls").read_text() == "get_credential\nlogin\n"
    again = run_cli("replay", "s2", "--tools", "tools.py:tools", "--data-dir", "data",
                    "--offline", "--json", cwd=folder)
    assert again.returncode == 0, again.stderr
    uninterrupted = _run(folder, "s3")
    assert json.loads(again.stdout)["output"] == json.loads(uninterrupted.stdout)["output"]
    assert (folder / "calls").read_text().count("get_credential") == 2  # s2 once, s3 once
    notes = [e for e in _events(folder, "s2") if e["type"] == "harness.model.called"]
    assert len(notes) == 1  # the reply committed before the kill was not asked again


def test_reveal_reads_a_value_back_and_records_the_reading(folder: Path,
                                                           world_kind: Any) -> None:
    env = world_kind.env(folder / "data")  # the PostgreSQL world keeps its key in meta
    assert _run(folder, "s4", env=env).returncode == 0
    shown = run_cli("reveal", "s4", "fetch", "--data-dir", "data", cwd=folder, env=env)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == {"token": VALUE}
    prompt = run_cli("reveal", "s4", "use", "--input", "--data-dir", "data", cwd=folder,
                     env=env)
    assert json.loads(prompt.stdout) == {"token": VALUE}
    events = _events(folder, "s4", env)
    assert "SENSITIVEVALUE" not in json.dumps([e for e in events
                                               if e["type"] != "SensitiveValueRead"])
    read = [e["payload"] for e in events if e["type"] == "SensitiveValueRead"]
    assert [(r["stepPath"], r["what"]) for r in read] == [("fetch", "output"), ("use", "input")]
    assert all("@" in r["reader"] for r in read)
    plain = run_cli("reveal", "s4", "plain", "--data-dir", "data", cwd=folder, env=env)
    assert plain.returncode == 2 and "is not sensitive" in plain.stderr
    missing = run_cli("reveal", "s4", "nope", "--data-dir", "data", cwd=folder, env=env)
    assert missing.returncode == 2 and "no output of step nope" in missing.stderr
    verified = run_cli("verify", "--data-dir", "data", cwd=folder, env=env)
    assert verified.returncode == 0, verified.stdout + verified.stderr  # the chain holds
