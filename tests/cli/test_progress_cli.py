"""Live progress of `lwtool run` and `replay`: shown on stderr when it is a terminal (a
real pseudo-terminal here), never on stdout, and nothing extra when stderr is not a
terminal or with --quiet."""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import subprocess
import sys
from pathlib import Path

from lwtool.observe.timeline import Timeline, branch_of, strip_visit
from lwtool.record.report import usage_report
from lwtool.world.local import LocalWorld
from tests.conftest import ROOT, run_cli

WORKFLOWS = ROOT / "tests" / "runtime" / "workflows"
TOOLS = f"{ROOT / 'tests' / 'runtime' / 'side_effects.py'}:tools"
ITEMS = {"items": [{"id": key, "n": n, "sleep": 0.6} for n, key in enumerate("abc")]}
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _env(work: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "LWTOOL_TEST_DIR": str(work), "TERM": "xterm-256color",
            "COLUMNS": "160", **extra}


def _on_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `lwtool ARGS` with stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "lwtool", *args], cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = bytearray()
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.stdout is not None
    stdout = proc.stdout.read().decode()
    return proc.wait(timeout=60), stdout, seen.decode(errors="replace")


def _frames(stderr: str) -> str:
    """The terminal text without cursor movement and colour."""
    return ANSI.sub("", stderr).replace("\r", "")


def _fanout(work: Path, run_id: str, *extra: str) -> list[str]:
    (work / "items.json").write_text(json.dumps(ITEMS))
    return ["run", str(WORKFLOWS / "fanout-settled.lwir.yaml"), "--input",
            str(work / "items.json"), "--tools", TOOLS, "--data-dir", str(work / "data"),
            "--run-id", run_id, *extra]


def test_progress_on_a_terminal_shows_steps_branches_and_the_end(tmp_path: Path) -> None:
    code, stdout, stderr = _on_terminal(_fanout(tmp_path, "live"), _env(tmp_path))
    assert code == 0, stderr
    output = json.loads(stdout)  # stdout is the output alone, no progress in it
    assert [item["double"] for item in output] == [0, 2, 4]
    shown = _frames(stderr)
    assert re.search(r"run live · running · \d of \d steps done", shown), shown
    assert re.search(r"running each\[[abc]\]\.work · tool\.call · \d+\.\ds", shown), shown
    assert re.search(r"each: branches \d done · [12] running · 0 failed", shown), shown
    final = shown[shown.rindex("run live · completed"):]
    assert final.startswith("run live · completed · 4 of 4 steps done"), final
    assert "each: branches 3 done · 0 running · 0 failed" in final
    assert "lwtool: run live completed" in shown


def test_quiet_and_a_stderr_that_is_no_terminal_show_no_progress(tmp_path: Path) -> None:
    code, stdout, stderr = _on_terminal(_fanout(tmp_path, "quiet", "--quiet"),
                                        _env(tmp_path))
    assert code == 0, stderr
    assert stderr == "lwtool: run quiet started\r\nlwtool: run quiet completed\r\n"
    piped = run_cli(*_fanout(tmp_path, "piped"), env=_env(tmp_path))
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "lwtool: run piped started\nlwtool: run piped completed\n"
    assert json.loads(piped.stdout) == json.loads(stdout)


def test_replay_progress_counts_the_steps_done_before_the_kill(tmp_path: Path) -> None:
    (tmp_path / "seed.json").write_text('{"seed": "s"}')
    args = ["--tools", TOOLS, "--data-dir", str(tmp_path / "data")]
    killed = subprocess.run(
        [sys.executable, "-m", "lwtool", "run", str(WORKFLOWS / "chain.lwir.yaml"), "--input",
         str(tmp_path / "seed.json"), "--run-id", "chain", *args], cwd=ROOT,
        env=_env(tmp_path, LWTOOL_FAULT_KILL_AFTER="StepCompleted@b", LWTOOL_TEST_SLEEP="0.3"),
        capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    code, stdout, stderr = _on_terminal(["replay", "chain", *args],
                                        _env(tmp_path, LWTOOL_TEST_SLEEP="0.3"))
    assert code == 0, stderr
    assert json.loads(stdout) == {"key": "d", "value": "s-b-c-d"}
    shown = _frames(stderr)
    first = re.search(r"run chain · running · (\d) of 4 steps done", shown)
    assert first is not None and first.group(1) == "2", shown  # a and b, from the log
    assert "running c · tool.call" in shown
    assert "run chain · completed · 4 of 4 steps done" in shown
    calls = (tmp_path / "calls.log").read_text().split()
    assert sorted(calls) == ["record:a", "record:b", "record:c", "record:d"]


def test_a_replay_of_an_unknown_run_on_a_terminal_says_so_once(tmp_path: Path) -> None:
    run_cli(*_fanout(tmp_path, "some"), env=_env(tmp_path))
    code, _, stderr = _on_terminal(["replay", "nope", "--data-dir", str(tmp_path / "data")],
                                   _env(tmp_path))
    assert code == 2
    assert "no run nope" in stderr and "Traceback" not in stderr


def test_the_timeline_agrees_with_the_usage_report(tmp_path: Path) -> None:
    result = run_cli("run", "examples/candidate-review.lwir.yaml", "--input",
                     "examples/inputs/candidate-review.json", "--models",
                     "examples/models.offline.yaml", "--data-dir", str(tmp_path), "--run-id",
                     "review")
    assert result.returncode == 0, result.stderr
    world = LocalWorld(tmp_path)
    events = world.events("review")
    timeline = Timeline.of("review", events)
    report = usage_report(events)["run"]
    assert timeline.status == "completed" and timeline.last_seq == events[-1].seq
    assert timeline.usage == {key: report[key] for key in timeline.usage}
    assert timeline.unpriced_calls == report["unpricedCalls"] == 6
    assert timeline.branches() == {"review-cands": dict.fromkeys(
        ["cand_001", "cand_002", "cand_003"], "done")}
    group = [a for a in timeline.attempts if a.uses == "parallel"]
    assert [(a.path, a.status) for a in group] == [("review-cands", "done")]
    assert all(a.status == "done" and a.ended is not None for a in timeline.attempts)
    models = [c for c in timeline.calls.values() if c.kind == "model"]
    assert len(models) == 6 and all(c.name == "lwtool/offline" for c in models)
    again = Timeline.of("review", events[:10])
    again.feed(events)  # events folded twice count once
    assert again.usage == timeline.usage and len(again.attempts) == len(timeline.attempts)
    world.close()


def test_step_paths_name_their_branch_and_visit() -> None:
    assert strip_visit("a[k].b.visit[2]") == "a[k].b"
    assert strip_visit("plain") == "plain"
    assert branch_of("g[k1].h[k2].s.visit[0]") == ("g[k1].h", "k2")
    assert branch_of("g.visit[1][k].s") == ("g.visit[1]", "k")
    assert branch_of("top.visit[3]") is None and branch_of("top") is None


def test_progress_ends_on_waiting_and_a_resume_runs_again(tmp_path: Path) -> None:
    (tmp_path / "ask.lwir.yaml").write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: Workflow\nmetadata: {name: ask}\n"
        "steps:\n  - id: ask\n    uses: human.input\n"
        "    with: {prompt: 'Go on?', schema: {type: boolean}}\n")
    (tmp_path / "in.json").write_text("{}")
    data = str(tmp_path / "data")
    code, _, stderr = _on_terminal(["run", str(tmp_path / "ask.lwir.yaml"), "--input",
                                    str(tmp_path / "in.json"), "--data-dir", data,
                                    "--run-id", "w"], _env(tmp_path))
    assert code == 3
    assert "run w · waiting · 0 of 1 steps done" in _frames(stderr)
    assert "waits for an answer at ask: Go on? · lwtool respond w ask --input FILE" in \
        _frames(stderr)
    events = LocalWorld(tmp_path / "data").events("w")
    assert Timeline.of("w", events).status == "waiting"
    assert Timeline.of("w", events).asks == {"ask": "Go on?"}
    (tmp_path / "yes.json").write_text("true")
    assert run_cli("respond", "w", "ask", "--input", str(tmp_path / "yes.json"),
                   "--data-dir", data, "--resume").returncode == 0
    timeline = Timeline.of("w", LocalWorld(tmp_path / "data").events("w"))
    assert (timeline.status, timeline.ended is not None) == ("completed", True)
    assert timeline.asks == {}
