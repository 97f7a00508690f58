"""Deno outside the bubblewrap wall (fs: read, or LWTOOL_CODE_SANDBOX=deno) dies with a
SIGKILLed lwtool instead of running on (hardening round 3): it has a parent-death
signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.coderun.helpers import code_step, workflow
from tests.conftest import ROOT

MARK = "--max-old-space-size=517"  # a memoryMb no other test uses: finds this Deno


def _denos() -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if MARK in argv and "deno" in argv:
            found.append(int(pid))
    return found


@pytest.mark.slow
@pytest.mark.parametrize(("sandbox", "env"), [({"fs": "read"}, {}),
                                              ({}, {"LWTOOL_CODE_SANDBOX": "deno"})],
                         ids=["fs-read", "wall-off"])
def test_deno_outside_the_wall_dies_with_lwtool(tmp_path: Path, sandbox: dict[str, str],
                                                env: dict[str, str]) -> None:
    spin = "export async function run() { while (true) {} }"
    lwir = workflow(code_step("spin", spin, sandbox={**sandbox, "memoryMb": 517,
                                                     "timeoutMs": 600_000}))
    (tmp_path / "wf.lwir.json").write_text(json.dumps(lwir))
    (tmp_path / "in.json").write_text("{}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", str(tmp_path / "wf.lwir.json"), "--input",
         str(tmp_path / "in.json"), "--data-dir", str(tmp_path / "data"), "--quiet"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _denos():
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _denos():
        assert time.monotonic() < deadline, "Deno outlived the SIGKILLed lwtool"
        time.sleep(0.05)
