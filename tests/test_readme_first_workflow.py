"""The README's "Your first workflow" works as written: its files are written as shown,
and its commands run in order in an empty folder with `lwtool` on PATH (`lwtool ui`
started, checked to serve, then stopped); the section sits in the README's first 150
lines, and the README points into nothing a clone lacks."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def _section() -> str:
    start = README.index("## Your first workflow")
    return README[start:README.index("\n## ", start + 1)]


def test_the_section_is_near_the_top_and_short() -> None:
    lines = README.splitlines()
    first = lines.index("## Your first workflow")
    assert first < 150
    assert len(_section().splitlines()) <= 56  # about 50 lines of it, a kill included
    assert "../shared" not in README
    assert "LWIR (Little Workflow Intermediate Representation)" in " ".join(README.split())


def test_the_first_workflow_runs_as_written(tmp_path: Path) -> None:
    section = _section()
    for lang, body in re.findall(r"```(\w+)\n(.*?)```", section, re.S):
        if lang in ("python", "yaml"):
            name = body.splitlines()[0].lstrip("# ").strip()
            (tmp_path / name).write_text(body)
    commands = [line[2:] for line in section.splitlines() if line.startswith("$ ")]
    assert commands[-1] == "lwtool ui" and len(commands) >= 5
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}"}
    for command in commands[:-1]:
        done = subprocess.run(command, shell=True, cwd=tmp_path, env=env, text=True,
                              capture_output=True, timeout=120)
        assert done.returncode == 0, (command, done.stderr)
        if command.startswith(("lwtool run", "lwtool replay")) and "kill -9" not in command:
            assert "DURABLE WORKFLOWS REPLAY AFTER A CRASH" in done.stdout
        if command.startswith("lwtool graph"):
            assert "loud<br/><small>tool.call · done</small>" in done.stdout
    # the killed run: replayed to the end, each step completed once, `loud` started twice
    assert any("kill -9" in c for c in commands) and any(c.startswith("lwtool replay")
                                                          for c in commands)
    events = subprocess.run(["lwtool", "events", "second", "--json"], cwd=tmp_path, env=env,
                            text=True, capture_output=True, timeout=60).stdout.splitlines()
    kinds = [(e["type"], e.get("stepPath")) for e in map(json.loads, events)]
    assert [k for k in kinds if k[0] == "StepCompleted"] == [
        ("StepCompleted", "count"), ("StepCompleted", "title"), ("StepCompleted", "loud")]
    assert kinds.count(("StepAttemptStarted", "loud")) == 2
    ui = subprocess.Popen(shlex.split(commands[-1]), cwd=tmp_path, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert ui.stderr is not None
        assert "inspector at http://127.0.0.1:8765/" in ui.stderr.readline()
    finally:
        ui.terminate()
        ui.wait(timeout=30)


def test_every_reference_in_the_readme_and_contributing_leads_somewhere() -> None:
    """`see "X"` names a heading of the README; a repository path it names exists; and
    neither page points outside the clone (`../shared`)."""
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    headings = set(re.findall(r"^#+ (.*)$", README, re.M))
    assert [ref for ref in re.findall(r'see "([^"]+)"', README) if ref not in headings] == []
    for page in (README, contributing):
        assert "../shared" not in page and "see Performance" not in page
        named = re.findall(r"`((?:docs|scripts|bench|tests|editors|examples)/[\w./-]+)`", page)
        assert [path for path in named if not (ROOT / path.rstrip("/")).exists()] == []
