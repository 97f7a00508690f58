"""Where a run's scratch lives under the data dir, and what removes it when the run
ends. Kept apart from lwtool.harness.stores (memory stores, mounts): every run removes
its scratch, few runs mount anything."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from lwtool.world.base import check_run_id


def run_dir(data_dir: Path, run_id: str, pipeline_id: str | None = None) -> Path:
    """`<dataDir>/runs/<runId>`, or `<dataDir>/runs/<pipelineId>/sub-runs/<runId>` for a
    pipeline's sub-run: the folder that holds all of the run's scratch."""
    runs = data_dir / "runs"
    if pipeline_id is None:
        return runs / check_run_id(run_id)
    return runs / check_run_id(pipeline_id) / "sub-runs" / check_run_id(run_id)


def remove_scratch(data_dir: Path, run_id: str, pipeline_id: str | None = None) -> None:
    """Scratch is ephemeral: the run's is gone when the run ends (memory stays)."""
    import shutil

    shutil.rmtree(run_dir(data_dir, run_id, pipeline_id), ignore_errors=True)


def scratch_remover(world: Any, *run_ids: str | None,
                    pipeline: str | None = None) -> list[Callable[[], None]]:
    """What removes these runs' scratch when a run ends (a RunState's `on_end`): a
    workflow run's own, and the planner session's it was planned by (kept until then,
    its workers read it at /mnt/scratch/from-planner); under `pipeline` for the runs
    of a pipeline run. None for a world without a data dir."""
    data_dir = getattr(world, "data_dir", None)
    if data_dir is None:
        return []
    return [partial(remove_scratch, Path(data_dir), run_id, pipeline)
            for run_id in run_ids if run_id]
