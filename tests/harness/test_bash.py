"""The bash tool: its view is only the session's mounts, read-only where they are; `..`,
symlinks and absolute paths that leave it are refused before the command runs (and
the kernel refuses what the check cannot see); no network; a fresh /tmp; time, output,
file-size and process limits; failing closed where bubblewrap cannot run, and the
opt-in path check."""

from __future__ import annotations

import asyncio
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from lwtool.harness.bash import BashLimit, BashOptions, BashTool, BashUnavailable
from lwtool.harness.pathcheck import BashRefused
from lwtool.harness.stores import ScratchLayout, role_mounts
from lwtool.sandbox.bwrap import bwrap_problem

PROBLEM = bwrap_problem()
requires_bwrap = pytest.mark.skipif(
    PROBLEM is not None and not os.environ.get("LWTOOL_REQUIRE_SANDBOX"),
    reason=f"bubblewrap cannot run here ({PROBLEM}); .ci/run installs it")


def _tool(tmp_path: Path, sandbox: str = "bwrap", **limits: Any) -> BashTool:
    data = tmp_path / "data"
    mounts = role_mounts("planner", data, ScratchLayout(data, "run_1"), workflow_id="wf")
    (data / "memory/org/runbook.md").write_text("org runbook\n")
    options = BashOptions(sandbox=sandbox, **{"timeout": 10.0, **limits})  # type: ignore[arg-type]
    return BashTool(mounts.mounts, options, data / "runs/run_1/tmp")


def _run(tool: BashTool, command: str) -> dict[str, Any]:
    return asyncio.run(tool.run(command))


def _refused(tool: BashTool, command: str) -> str:
    with pytest.raises(BashRefused) as info:
        _run(tool, command)
    return str(info.value)


@requires_bwrap
def test_the_command_sees_its_mounts_and_writes_only_where_it_may(tmp_path: Path) -> None:
    tool = _tool(tmp_path)
    out = _run(tool, "pwd; ls /mnt/memory /mnt/scratch; cat /mnt/memory/org/runbook.md; id -u")
    assert out == {"exitCode": 0, "stderr": "", "stdout":
                   "/mnt/scratch/own\n/mnt/memory:\norg\nworkflow\n\n/mnt/scratch:\nown\n"
                   "org runbook\n1000\n"}
    _run(tool, "echo lesson > /mnt/memory/workflow/lessons.md && echo wip > draft.md")
    data = tmp_path / "data"
    assert (data / "memory/workflows/wf/lessons.md").read_text() == "lesson\n"
    assert (data / "runs/run_1/scratch/draft.md").read_text() == "wip\n"
    assert "read-only (/mnt/memory/org is mounted ro)" in _refused(
        tool, "echo x > /mnt/memory/org/runbook.md")
    assert "read-only" in _refused(tool, "cd /mnt/memory/org && rm runbook.md")
    # A write the check cannot see (inside a quoted script): the kernel refuses it.
    hidden = _run(tool, "bash -c 'echo x > /mnt/memory/org/runbook.md'")
    assert hidden["exitCode"] != 0 and "Read-only file system" in hidden["stderr"]
    assert (data / "memory/org/runbook.md").read_text() == "org runbook\n"


@requires_bwrap
def test_paths_that_leave_the_mounts_are_refused(tmp_path: Path) -> None:
    tool = _tool(tmp_path)
    assert "../../../etc/passwd (resolves to /etc/passwd) is outside the mounts" in _refused(
        tool, "cat ../../../etc/passwd")
    assert "/etc/shadow is outside the mounts" in _refused(tool, "cat /etc/shadow")
    assert "/root" in _refused(tool, "ls /root")
    _run(tool, "ln -s / escape && ln -s /mnt/memory/org org")
    assert "escape/etc/passwd (resolves to /etc/passwd)" in _refused(
        tool, "cat escape/etc/passwd")
    assert "org/x (resolves to /mnt/memory/org/x) is read-only" in _refused(
        tool, "echo x >> org/x")
    # Followed inside the sandbox all the same, the host's files are not there.
    hidden = _run(tool, "bash -c 'cat escape/etc/passwd; ls escape/root'")
    assert hidden["stdout"] == "" and "No such file" in hidden["stderr"]
    assert "cannot parse" in _refused(tool, "echo 'unterminated")
    assert "non-empty" in _refused(tool, "   ")


@requires_bwrap
def test_no_network_and_a_fresh_tmp_each_command(tmp_path: Path) -> None:
    tool = _tool(tmp_path)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        out = _run(tool, f"echo hi > /dev/tcp/127.0.0.1/{port} && echo connected")
    assert out["exitCode"] != 0 and "connected" not in out["stdout"]
    assert _run(tool, "echo a > /tmp/x && cat /tmp/x")["stdout"] == "a\n"
    assert "No such file" in _run(tool, "cat /tmp/x")["stderr"]
    assert _run(tool, "env | sort")["stdout"].split("\n")[:3] == [
        "HOME=/mnt/scratch/own", "LANG=C.UTF-8", "PATH=/usr/local/bin:/usr/bin:/bin"]


@requires_bwrap
def test_a_gigabyte_of_output_is_cut_and_the_command_stopped(tmp_path: Path) -> None:
    tool = _tool(tmp_path, max_output_bytes=4096)
    started = time.monotonic()
    out = _run(tool, "head -c 1000000000 /dev/zero | tr '\\0' y; echo done")
    assert time.monotonic() - started < 5
    assert out["truncated"] is True and "cut at 4096 bytes" in out["note"]
    assert len(out["stdout"]) + len(out["stderr"]) == 4096 and "done" not in out["stdout"]


@requires_bwrap
def test_time_and_file_size_limits(tmp_path: Path) -> None:
    tool = _tool(tmp_path, timeout=1.0, max_file_bytes=1 << 20)
    started = time.monotonic()
    with pytest.raises(BashLimit, match=r"timed out after 1 s.*\nstarted"):
        _run(tool, "echo started; sleep 30")
    assert time.monotonic() - started < 5
    out = _run(tool, "head -c 5000000 /dev/zero > big")
    assert out["exitCode"] != 0
    assert (tmp_path / "data/runs/run_1/scratch/big").stat().st_size == 1 << 20


@requires_bwrap
def test_a_fork_bomb_ends_and_leaves_nothing_running(tmp_path: Path) -> None:
    tool = _tool(tmp_path, timeout=5.0, max_processes=64)
    before = len(os.listdir("/proc"))
    started = time.monotonic()
    try:
        _run(tool, ":(){ :|:& };:")
    except BashLimit:
        pass  # where no pids cgroup can be made, the time limit ends it
    assert time.monotonic() - started < 15
    time.sleep(0.5)
    assert len(os.listdir("/proc")) < before + 20
    assert _run(tool, "echo alive")["stdout"] == "alive\n"  # the next command runs


def test_without_bubblewrap_the_tool_fails_closed(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    bwrap_problem.cache_clear()
    try:
        with pytest.raises(BashUnavailable, match="bubblewrap is not installed.*"
                           "LWTOOL_BASH_SANDBOX=path-check"):
            _tool(tmp_path)
    finally:
        monkeypatch.undo()
        bwrap_problem.cache_clear()
    _tool(tmp_path, sandbox="path-check")  # the opt-in needs no bwrap


def test_path_check_mode_runs_on_the_host_inside_the_mounts(tmp_path: Path) -> None:
    tool = _tool(tmp_path, sandbox="path-check")
    data = tmp_path / "data"
    own, org = data / "runs/run_1/scratch", data / "memory/org"
    assert _run(tool, "pwd")["stdout"] == f"{own}\n"
    assert _run(tool, f"cat {org}/runbook.md")["stdout"] == "org runbook\n"
    assert "is outside the mounts" in _refused(tool, "cat /etc/passwd")
    assert "is outside the mounts" in _refused(tool, "cat ../../../../etc/hostname")
    assert "read-only" in _refused(tool, f"echo x > {org}/runbook.md")
    assert "read-only" in _refused(tool, f"cd {org}; rm -f runbook.md")
    assert "read-only" in _refused(tool, f"cp draft.md {org}/")
    assert "read-only" in _refused(tool, f"sed -i s/org/x/ {org}/runbook.md")
    _run(tool, f"ln -s {org} org; ln -s /etc etc")
    assert "read-only" in _refused(tool, "echo x > org/new")
    assert "outside the mounts" in _refused(tool, "cat etc/passwd")
    assert "outside the mounts" in _refused(tool, "cat etc/../../etc/passwd")
    _run(tool, "echo a > $TMPDIR/t 2>/dev/null; echo wip > draft.md")
    assert (own / "draft.md").read_text() == "wip\n"
    assert (org / "runbook.md").read_text() == "org runbook\n"
