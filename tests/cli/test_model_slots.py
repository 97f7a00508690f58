"""Every model slot a run will use must resolve before any step runs: an unmapped slot
(or one mapped to a string no provider answers to) is one message naming it and the
ways to map it, exit 2, with no step run and nothing written."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lwtool.calls.models import UnresolvedModel
from lwtool.runtime.interpreter import start_run
from lwtool.tools import ToolRegistry
from lwtool.world.local import LocalWorld
from tests.conftest import run_cli

WORKFLOW = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: slots}
permissions: {tools: [touch], models: [writer]}
steps:
  - id: first
    uses: tool.call
    with: {tool: touch}
  - id: write
    uses: ai.generate
    needs: [first]
    with: {model: writer, prompt: "Say hi"}
"""

TOOLS = '''\
from pathlib import Path
def touch(args):
    Path("touched").write_text("the tool ran")
    return {"ok": True}
tools = {"touch": touch}
'''


def _run(folder: Path, *extra: str) -> object:
    return run_cli("run", "wf.lwir.yaml", "--input", "-", "--tools", "tools.py:tools",
                   "--data-dir", "data", *extra, cwd=folder, stdin="{}")


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / "wf.lwir.yaml").write_text(WORKFLOW)
    (tmp_path / "tools.py").write_text(TOOLS)
    return tmp_path


def test_an_unmapped_slot_stops_the_run_before_its_first_step(folder: Path) -> None:
    done = _run(folder)
    assert done.returncode == 2  # type: ignore[attr-defined]
    assert done.stderr.splitlines() == [  # type: ignore[attr-defined]
        "lwtool: model slot 'writer' is not mapped and names no provider litellm knows: "
        "map it with --models FILE (writer: openai/gpt-4o-mini, or writer: offline) or "
        "in the definition's models ({id: writer, model: openai/gpt-4o-mini}); nothing "
        "was run"]
    assert not (folder / "touched").exists()  # the side-effecting tool never ran
    assert run_cli("runs", "--data-dir", "data", cwd=folder).stdout == "no runs\n"


def test_a_slot_mapped_to_an_unknown_provider_is_named_too(folder: Path) -> None:
    (folder / "models.yaml").write_text("writer: nonsense-model\n")
    done = _run(folder, "--models", "models.yaml")
    assert done.returncode == 2  # type: ignore[attr-defined]
    assert "model slot 'writer' maps to 'nonsense-model', which names no provider" in \
        done.stderr  # type: ignore[attr-defined]
    assert not (folder / "touched").exists()


def test_a_mapped_slot_runs(folder: Path) -> None:
    (folder / "models.yaml").write_text("writer: offline\n")
    done = _run(folder, "--models", "models.yaml")
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    assert (folder / "touched").exists()


def test_the_python_api_raises_before_writing(tmp_path: Path) -> None:
    from lwtool.source.loader import load_path

    (tmp_path / "wf.lwir.yaml").write_text(WORKFLOW)
    lwir = load_path(str(tmp_path / "wf.lwir.yaml")).value
    world = LocalWorld(tmp_path / "data")
    with pytest.raises(UnresolvedModel, match="model slot 'writer'"):
        asyncio.run(start_run(world, lwir, {}, ToolRegistry(), {}))
    assert world.list_runs() == []


def test_a_planner_slot_that_resolves_to_nothing_stops_lwtool_plan(tmp_path: Path) -> None:
    (tmp_path / "d.definition.yaml").write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\nid: d\n"
        "models: [{id: m, model: nonsense-model}]\nplanner: {model: m}\n")
    done = run_cli("plan", "d.definition.yaml", "--input", "-", "-o", "out.lwir.yaml",
                   "--data-dir", "data", cwd=tmp_path, stdin="{}")
    assert done.returncode == 2, done.stderr
    assert "model slot 'm' maps to 'nonsense-model', which names no provider" in done.stderr
    assert not (tmp_path / "out.lwir.yaml").exists()
