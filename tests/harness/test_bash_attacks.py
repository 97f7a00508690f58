"""The bash tool under attack (hardening round 3): path-check mode hides lwtool's own
process and environment, is refused to the roles that read untrusted content unless
named, warns at start; it works with a relative data dir and reports a successful
command's real exit code; memory and per-store disk limits in both sandboxes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lwtool.harness import bash as bash_module
from lwtool.harness.bash import BashLimit, BashOptions, BashTool, BashUnavailable
from lwtool.harness.stores import ScratchLayout, role_mounts
from tests.harness.test_bash import _run, _tool, requires_bwrap

SECRET = "lwtool-test-secret-7f3a"
SANDBOXES = [pytest.param("bwrap", marks=requires_bwrap), "path-check"]


def test_path_check_commands_cannot_read_lwtools_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    tool = _tool(tmp_path, sandbox="path-check")
    # Variables pass the word check (path-check is no sandbox): the kernel view decides.
    out = _run(tool, "s=/; p=${s}proc; env; cat $p/$PPID/environ; for x in $p/[0-9]*; do "
                     "cat $x/environ; done; echo done")
    assert out["stdout"].endswith("done\n")
    assert SECRET not in out["stdout"] + out["stderr"]
    assert str(os.getpid()) not in _run(tool, "s=/; p=${s}proc; ls $p")["stdout"].split()


@pytest.mark.parametrize("role", ["planner", "fixer"])
def test_path_check_is_refused_to_untrusted_roles_unless_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, role: str) -> None:
    data = tmp_path / "data"
    mounts = role_mounts("planner", data, ScratchLayout(data, "r"), workflow_id="wf").mounts
    options = BashOptions(sandbox="path-check")
    monkeypatch.delenv(bash_module.PATH_CHECK_ROLES_ENV, raising=False)
    with pytest.raises(BashUnavailable, match="name it in LWTOOL_BASH_PATH_CHECK_ROLES"):
        BashTool(mounts, options, tmp_path / "tmp", role)
    monkeypatch.setenv(bash_module.PATH_CHECK_ROLES_ENV, f"other, {role}")
    assert BashTool(mounts, options, tmp_path / "tmp", role).options is options
    assert BashOptions(sandbox="bwrap").refusal(role) is None


def test_path_check_says_at_start_what_it_does_not_protect(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    bash_module._warn_path_check.cache_clear()
    _tool(tmp_path, sandbox="path-check")
    _tool(tmp_path, sandbox="path-check")
    err = capfd.readouterr().err
    assert err.count("path-check mode, which is NOT a sandbox") == 1
    assert "can read and write any file" in err


def test_path_check_with_a_relative_data_dir(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    data = Path(".little-workflow")
    mounts = role_mounts("agent", data, ScratchLayout(data, "r"), workflow_id="wf").mounts
    tool = BashTool(mounts, BashOptions(sandbox="path-check", timeout=10.0), data / "tmp")
    out = _run(tool, "echo note > note.md; cat note.md; pwd")
    assert out["exitCode"] == 0 and out["stdout"].startswith("note\n")
    assert out["stdout"].rstrip().endswith(str(tmp_path / ".little-workflow/runs/r/scratch"))


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_successful_command_reports_exit_0(tmp_path: Path, sandbox: str) -> None:
    tool = _tool(tmp_path, sandbox=sandbox)
    codes = [_run(tool, command)["exitCode"] for command in ["true", "echo hi", "exit 3"] * 10]
    assert codes == [0, 0, 3] * 10


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_memory_is_capped(tmp_path: Path, sandbox: str) -> None:
    tool = _tool(tmp_path, sandbox=sandbox, max_memory_bytes=128 << 20)
    out = _run(tool, "python3 -c 'b = bytearray(600 << 20); print(len(b))'")
    assert out["exitCode"] != 0 and "629145600" not in out["stdout"]
    assert _run(tool, "python3 -c 'print(len(bytearray(16 << 20)))'")["stdout"] == "16777216\n"


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_store_cannot_be_filled_past_its_limit(tmp_path: Path, sandbox: str) -> None:
    tool = _tool(tmp_path, sandbox=sandbox, max_store_bytes=8 << 20, timeout=30.0)
    store = tmp_path / "data/memory/workflows/wf"
    target = "/mnt/memory/workflow" if sandbox == "bwrap" else str(store)
    one = _run(tool, f"head -c 64M /dev/zero > {target}/big; echo $?")
    assert one["exitCode"] != 0 or one["stdout"].strip() != "0"  # SIGXFSZ at the limit
    assert (store / "big").stat().st_size <= 8 << 20
    with pytest.raises(BashLimit, match="holds more than its limit of 8388608 bytes"):
        _run(tool, f"for i in $(seq 400); do head -c 1M /dev/zero > {target}/f$i; done")
    used = sum(p.stat().st_size for p in store.iterdir())
    assert used < 200 << 20  # stopped within a poll, far from the 400 MiB asked for
    freed = _run(tool, f"rm -f {target}/f* {target}/big; echo freed")
    assert freed["stdout"] == "freed\n"
    assert _run(tool, f"echo ok > {target}/small; cat {target}/small")["stdout"] == "ok\n"
