"""Memory stores and run scratch: the spec's layout under the data dir, the mounts each
role gets (rw/ro), ids that cannot name a folder outside the store, and scratch that
goes when the run ends while memory stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from lwtool.harness.stores import (
    MemoryConfig,
    ScratchLayout,
    pipeline_key,
    role_mounts,
    step_folder,
)


def _table(mounts: object, data: Path) -> dict[str, tuple[str, str]]:
    return {m.target: (str(m.source.relative_to(data)), "rw" if m.writable else "ro")
            for m in mounts.mounts}  # type: ignore[attr-defined]


def test_planner_sees_its_workflow_store_rw_org_ro_and_its_own_scratch(tmp_path: Path) -> None:
    mounts = role_mounts("planner", tmp_path, ScratchLayout(tmp_path, "run_1"),
                         workflow_id="triage")
    assert _table(mounts, tmp_path) == {
        "/mnt/scratch/own": ("runs/run_1/scratch", "rw"),
        "/mnt/memory/workflow": ("memory/workflows/triage", "rw"),
        "/mnt/memory/org": ("memory/org", "ro")}
    assert mounts.store_ids() == ["org:ro", "workflows/triage:rw"]
    assert all(m.source.is_dir() for m in mounts.mounts)


def test_worker_reads_memory_and_upper_scratch_and_writes_only_its_step_scratch(
        tmp_path: Path) -> None:
    layout = ScratchLayout(tmp_path, "run_1")
    mounts = role_mounts("worker", tmp_path, layout, workflow_id="triage",
                         step_path="review[2]/draft")
    assert _table(mounts, tmp_path) == {
        "/mnt/scratch/own": ("runs/run_1/steps/review[2]%2Fdraft/scratch", "rw"),
        "/mnt/scratch/from-planner": ("runs/run_1/scratch", "ro"),
        "/mnt/scratch/peer-steps": ("runs/run_1/steps", "ro"),
        "/mnt/memory/workflow": ("memory/workflows/triage", "ro"),
        "/mnt/memory/org": ("memory/org", "ro")}
    fixer = role_mounts("fixer", tmp_path, layout, workflow_id="triage", step_path="fix")
    assert _table(fixer, tmp_path)["/mnt/memory/workflow"][1] == "rw"  # persistent fixes
    with pytest.raises(ValueError, match="step path"):
        role_mounts("worker", tmp_path, layout, workflow_id="triage")


def test_orchestrator_and_sub_runs_of_a_pipeline(tmp_path: Path) -> None:
    key = pipeline_key(["sha256:b", "sha256:a"])
    assert key == pipeline_key(["sha256:a", "sha256:b"])  # order does not matter
    orchestrator = role_mounts("orchestrator", tmp_path, ScratchLayout(tmp_path, "pipe_1"),
                               pipeline=key, available_workflows=["triage", "summarize"])
    assert _table(orchestrator, tmp_path) == {
        "/mnt/scratch/own": ("runs/pipe_1/scratch", "rw"),
        "/mnt/memory/pipeline": (f"memory/pipelines/{key}", "rw"),
        "/mnt/memory/available-workflows/summarize": ("memory/workflows/summarize", "ro"),
        "/mnt/memory/available-workflows/triage": ("memory/workflows/triage", "ro"),
        "/mnt/memory/org": ("memory/org", "ro")}
    sub = ScratchLayout(tmp_path, "run_7", pipeline_id="pipe_1")
    planner = role_mounts("planner", tmp_path, sub, workflow_id="triage")
    assert _table(planner, tmp_path)["/mnt/scratch/own"] == (
        "runs/pipe_1/sub-runs/run_7/scratch", "rw")
    assert _table(planner, tmp_path)["/mnt/scratch/from-orchestrator"] == (
        "runs/pipe_1/scratch", "ro")
    worker = role_mounts("worker", tmp_path, sub, workflow_id="triage", step_path="a")
    assert _table(worker, tmp_path)["/mnt/scratch/own"] == (
        "runs/pipe_1/sub-runs/run_7/steps/a/scratch", "rw")


def test_memory_settings_org_rw_none_and_attached_peers(tmp_path: Path) -> None:
    memory = MemoryConfig(workflow="ro", org="rw", attach=("billing", "triage"))
    mounts = role_mounts("planner", tmp_path, ScratchLayout(tmp_path, "r"),
                         workflow_id="triage", memory=memory)
    table = _table(mounts, tmp_path)
    assert table["/mnt/memory/workflow"] == ("memory/workflows/triage", "ro")
    assert table["/mnt/memory/org"] == ("memory/org", "rw")
    assert table["/mnt/memory/peer-workflows/billing"] == ("memory/workflows/billing", "ro")
    assert "/mnt/memory/peer-workflows/triage" not in table  # its own store, not a peer
    none = role_mounts("agent", tmp_path, ScratchLayout(tmp_path, "r2"),
                       memory=MemoryConfig(org="none"))
    assert list(_table(none, tmp_path)) == ["/mnt/scratch/own"]
    assert MemoryConfig.from_json({"workflow": "ro", "attach": ["x"]}) == MemoryConfig(
        "ro", "ro", ("x",))


@pytest.mark.parametrize("bad", ["../etc", "a/b", "..", "", ".hidden", "x" * 200])
def test_ids_that_would_leave_the_store_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match="invalid workflow id"):
        role_mounts("planner", tmp_path, ScratchLayout(tmp_path, "r"), workflow_id=bad)
    assert not (tmp_path / "etc").exists()


@pytest.mark.parametrize("bad", [{"workflow": "write"}, {"org": 1}, {"attach": "x"},
                                 {"attach": ["../x"]}, {"extra": 1}, []])
def test_bad_memory_settings_say_what_is_wrong(bad: object) -> None:
    with pytest.raises(ValueError, match="memory"):
        MemoryConfig.from_json(bad)


def test_scratch_goes_when_the_run_ends_memory_stays(tmp_path: Path) -> None:
    layout = ScratchLayout(tmp_path, "run_1")
    mounts = role_mounts("planner", tmp_path, layout, workflow_id="triage")
    (mounts.own.source / "draft.md").write_text("wip")
    (tmp_path / "memory/workflows/triage/lessons.md").write_text("keep")
    layout.remove()
    assert not (tmp_path / "runs/run_1").exists()
    assert (tmp_path / "memory/workflows/triage/lessons.md").read_text() == "keep"


def test_step_folders_are_one_name_each() -> None:
    assert step_folder("a") == "a"
    assert step_folder("loop[3]/inner/x") == "loop[3]%2Finner%2Fx"
    assert step_folder("..") != ".." and "/" not in step_folder("../..")
