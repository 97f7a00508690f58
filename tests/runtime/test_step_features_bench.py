"""bench/step_features.py measures what is left of lwtool when a guarantee is switched
off: each variant must still write the events lwtool writes (else its figure measures
less work, not a cheaper guarantee), and lwtool must be whole again after it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lwtool.record.run_state import RunState
from lwtool.runtime import dispatch
from lwtool.runtime.scope import Scope
from lwtool.tools import Tool
from tests.conftest import ROOT


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("step_features",
                                                  ROOT / "bench/step_features.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["step_features"] = module
    spec.loader.exec_module(module)
    return module


def _run(module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["step_features.py", "--steps", "4", "--reps", "1",
                                      "--dir", str(tmp_path)])
    module.main()


def test_every_variant_writes_lwtool_s_events_and_lwtool_is_whole_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    originals = (Scope.execute, Tool.invoke, RunState.note, RunState.__post_init__,
                 RunState.turn_due, dispatch._deadlines, dispatch.worker_identity)
    module = _bench()
    _run(module, tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert "4-step tool.call chain in this process, process mode" in out
    for label in ("lwtool", "without deadline", "without tool guard", "without evidence timer",
                  "without step slots", "without turns", "without session checks",
                  "without all of them", "fused", "fused + step kind",
                  "fused + note and record", "fused + attempt", "fused + run_step"):
        assert f"  {label} " in out
    assert (Scope.execute, Tool.invoke, RunState.note, RunState.__post_init__,
            RunState.turn_due, dispatch._deadlines, dispatch.worker_identity) == originals


def test_a_variant_that_writes_other_events_stops_the_bench(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _bench()
    fused = module._fused

    async def short(self: Any) -> None:  # the fused loop, its StepAttemptStarted left out
        world = self.run.world
        append = world.append
        world.append = lambda run_id, events, *rest: append(run_id, events[1:], *rest)
        try:
            await fused(self)
        finally:
            world.append = append

    monkeypatch.setattr(module, "_fused", short)
    with pytest.raises(SystemExit, match="fused: its run wrote other events than lwtool's"):
        _run(module, tmp_path, monkeypatch)
    assert Scope.execute is not short
