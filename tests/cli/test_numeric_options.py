"""Every float option refuses NaN and infinities in one line with exit 2, before
anything runs: click takes `nan` and `inf` as floats, and a NaN passes any minimum
(`--max-cost-usd nan` was no budget at all; `worker --lease-seconds nan` left a dead
worker's run claimed for ever). The Python API refuses them as ValueError."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lwtool import local_world
from lwtool.runtime.api import load_lwir
from lwtool.runtime.interpreter import start_run
from lwtool.tools import ToolRegistry
from tests.conftest import run_cli

WORKFLOW = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: t}
permissions: {models: [offline]}
steps:
  - {id: a, uses: ai.generate, with: {model: offline, prompt: hi}}
"""


@pytest.mark.parametrize(("command", "option", "value"), [
    ("run", "--max-cost-usd", "nan"), ("run", "--step-timeout", "nan"),
    ("run", "--code-timeout", "inf"), ("replay", "--step-timeout", "NaN"),
    ("worker", "--lease-seconds", "nan"), ("worker", "--lease-seconds", "inf"),
    ("export-otel", "--timeout", "infinity"),
])
def test_a_float_option_refuses_what_is_not_finite(tmp_path: Path, command: str, option: str,
                                                    value: str) -> None:
    (tmp_path / "wf.lwir.yaml").write_text(WORKFLOW)
    target = {"run": ["wf.lwir.yaml", "-i", "-"], "replay": ["r1"], "export-otel": ["r1"],
              "worker": ["--world", "postgresql://nobody@127.0.0.1:1/none"]}[command]
    done = run_cli(command, *target, option, value, "--data-dir", "data", cwd=tmp_path,
                   stdin="{}")
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"lwtool: {option} takes a finite number, not {float(value)}\n"
    assert not (tmp_path / "data").exists()  # nothing was started or written


def test_the_api_refuses_a_budget_or_a_timeout_that_is_not_finite(tmp_path: Path) -> None:
    (tmp_path / "wf.lwir.yaml").write_text(WORKFLOW)
    lwir = load_lwir(tmp_path / "wf.lwir.yaml")
    world = local_world(tmp_path / "data")
    models = {"offline": "offline"}
    for kwargs in ({"budget": {"maxCostUsd": float("nan")}}, {"budget": {"maxTokens": -1}},
                   {"step_timeout": float("inf")}, {"step_timeout": float("nan")}):
        with pytest.raises(ValueError, match="finite number"):
            asyncio.run(start_run(world, lwir, {}, ToolRegistry(), models, "r", **kwargs))
    assert world.list_runs() == []
