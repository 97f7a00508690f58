"""bench/planner_eval.py runs end to end with the scripted planner: every definition is
planned, first drafts with a flaw are repaired once, and the summary reports it."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

from tests.conftest import ROOT


def test_the_planner_eval_runs_with_the_scripted_planner(capsys) -> None:  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("planner_eval", ROOT / "bench/planner_eval.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["planner_eval"] = module
    spec.loader.exec_module(module)
    rows = asyncio.run(module.main(["scripted"]))
    assert len(rows) == len(module.CASES) >= 10
    assert all(r["valid"] for r in rows)
    assert [r["drafts"] for r in rows] == [1, 2] * (len(rows) // 2)
    assert all(r["inputTokens"] > 0 for r in rows)
    out = capsys.readouterr().out
    assert "scripted: first draft valid 6/12 (50%); after 1 repair 12/12 (100%)" in out
