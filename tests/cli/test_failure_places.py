"""A failure says where it happened in terms a user can act on: a tool that raises is
reported with its file, line and function (the traceback kept in StepAttemptFailed and
RunFailed), and Deno's "run again with --allow-read" becomes the LWIR setting to change."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

TOOLS = """\
def helper(x):
    return {"v": 1 / x}


def fetch(args):
    return helper(0)


tools = {"fetch": fetch}
"""

CODE = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: reads}
steps:
  - id: c
    uses: code.run
    with:
      entrypoint: main.ts
      files:
        main.ts:
          content: |
            export async function run() {
              return { text: await Deno.readTextFile("/etc/hostname") };
            }
      sandbox: {}
"""


def test_a_raising_tool_is_reported_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "wf.lwir.yaml").write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: Workflow\nmetadata: {name: x}\n"
        "permissions: {tools: [fetch]}\nsteps:\n"
        "  - {id: a, uses: tool.call, with: {tool: fetch}}\n")
    done = run_cli("run", "wf.lwir.yaml", "-i", "-", "--tools", "tools.py:tools",
                   "--data-dir", "data", "--run-id", "t1", cwd=tmp_path, stdin="{}")
    assert done.returncode == 1
    assert "tool 'fetch' raised ZeroDivisionError: division by zero (at tools.py:2 in " \
        "helper)" in done.stderr
    events = [json.loads(line) for line in run_cli(
        "events", "t1", "--data-dir", "data", "--json", cwd=tmp_path).stdout.splitlines()]
    failed = next(e for e in events if e["type"] == "StepAttemptFailed")["payload"]
    assert failed["traceback"].startswith("Traceback (most recent call last):")
    assert 'tools.py", line 6, in fetch' in failed["traceback"]
    assert failed["traceback"].rstrip().endswith("ZeroDivisionError: division by zero")


def test_denos_advice_becomes_the_lwir_setting(tmp_path: Path) -> None:
    (tmp_path / "cr.lwir.yaml").write_text(CODE)
    denied = run_cli("run", "cr.lwir.yaml", "-i", "-", "--data-dir", "data", cwd=tmp_path,
                     stdin="{}")
    assert denied.returncode == 1
    assert 'Requires read access to "/etc/hostname", allow it with `sandbox: {fs: read}` ' \
        "in the step's `with`" in denied.stderr
    assert "--allow-read" not in denied.stderr
    (tmp_path / "cr.lwir.yaml").write_text(CODE.replace("sandbox: {}", "sandbox: {fs: read}"))
    allowed = run_cli("run", "cr.lwir.yaml", "-i", "-", "--data-dir", "data", cwd=tmp_path,
                      stdin="{}")
    assert allowed.returncode == 0, allowed.stderr
