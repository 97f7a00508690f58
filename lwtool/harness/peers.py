"""What `/mnt/scratch/peer-steps` shows a worker or fixer session: each committed
step's output at `steps/<step>/output.json` beside its scratch. Written when a session
asks for its mounts (a custom harness's context, a fixer), from the committed
StepCompleted events, so a run whose steps need no mounts pays nothing per step."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from lwtool.world.files import NotARegularFile, write_inside


async def write_peer_outputs(run: Any, current: str) -> None:
    """Write every committed step's output but `current`'s (links are not followed)."""
    from lwtool.harness.stores import ScratchLayout, step_folder

    data_dir = getattr(run.world, "data_dir", None)
    if data_dir is None:
        return
    steps = ScratchLayout(Path(data_dir), run.run_id,
                          run.workspace.get("pipelineRunId")).steps_dir()
    for event in run.world.events(run.run_id, ["StepCompleted"]):
        path = event.step_path
        if path is None or path == current or "envelope" not in event.payload:
            continue  # a decision's choice has no output
        value = await run.output_of(event.payload)
        data = json.dumps(value, ensure_ascii=False, indent=1).encode("utf-8")
        with contextlib.suppress(NotARegularFile, OSError):
            write_inside(steps, f"{step_folder(path)}/output.json", data)
