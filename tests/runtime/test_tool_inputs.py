"""A tool gets its own copy of its input: whatever it does to it changes neither the
values the run goes on with (step outputs, the run input, parallel items) nor what the
log records as the input. Otherwise the uninterrupted run and its replay (which reads
the outputs back from the log) would see different values."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lwtool import run_workflow
from lwtool.record.ids import short_hash
from lwtool.world.local import LocalWorld
from tests.conftest import MINIMAL_HEADER, permitted


def _tools(flavour: str) -> dict[str, Any]:
    def make(args: Any) -> Any:
        return {"items": [1, 2], "meta": {"n": 1}}

    def spoil(args: Any) -> Any:  # changes everything it was given, in place
        seen = repr(args)
        if isinstance(args, dict):
            for value in list(args.values()):
                if isinstance(value, list):
                    value.append(99)
                if isinstance(value, dict):
                    value["spoiled"] = True
            args["spoiled"] = True
        return {"seen": seen}

    async def spoil_async(args: Any) -> Any:
        return spoil(args)

    def echo(args: Any) -> Any:
        return args

    return {"make": make, "spoil": spoil if flavour == "sync" else spoil_async, "echo": echo}


def _step(step_id: str, tool: str, **extra: Any) -> dict[str, Any]:
    return {"id": step_id, "uses": "tool.call", "with": {"tool": tool}, **extra}


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_a_tool_changing_its_input_changes_nothing_else(tmp_path: Path, flavour: str) -> None:
    doc = permitted({**MINIMAL_HEADER, "steps": [
        _step("a", "make"),
        _step("b", "spoil", needs=["a"], input={"whole": "{{ steps.a.output }}",
                                                 "items": "{{ steps.a.output.items }}"}),
        _step("c", "spoil", needs=["b"]),  # no input: the run input itself
        {"id": "each", "uses": "parallel", "needs": ["c"],
         "with": {"items": "{{ input.rows }}", "maxBranches": 5, "maxConcurrency": 2},
         "steps": [_step("row", "spoil")]},  # no input: the item itself
        _step("d", "echo", needs=["a", "each"], input={"a": "{{ steps.a.output }}",
                                                  "run": "{{ input }}"}),
    ]})
    world = LocalWorld(tmp_path / "data")
    run_input = {"rows": [{"k": 1}, {"k": 2}], "tags": ["t"]}
    result = asyncio.run(run_workflow(doc, run_input, world=world, tools=_tools(flavour)))
    assert result["output"] == {"a": {"items": [1, 2], "meta": {"n": 1}},
                                "run": {"rows": [{"k": 1}, {"k": 2}], "tags": ["t"]}}
    assert run_input == {"rows": [{"k": 1}, {"k": 2}], "tags": ["t"]}  # the caller's too
    # What the log says each attempt was given is what it was given, and hashes to it.
    started = [e.payload for e in world.events(result["runId"])
               if e.type == "StepAttemptStarted"]
    for payload in started:
        assert "spoiled" not in repr(payload["input"]) and "99" not in repr(payload["input"])
        assert payload["inputHash"] == short_hash(payload["input"])


def test_own_copy_shares_nothing_and_keeps_what_is_not_json() -> None:
    import datetime

    from lwtool.tools import own_copy

    value = {"a": [1, {"b": 2.5}], "s": "é", "n": None}
    copied = own_copy(value)
    assert copied == value and copied is not value
    assert copied["a"] is not value["a"] and copied["a"][1] is not value["a"][1]
    odd = {"big": 2**70, "when": datetime.date(2026, 1, 2), "s": "\udc00"}
    copied = own_copy(odd)  # not JSON: deep-copied as it is
    assert copied == odd and copied is not odd and type(copied["when"]) is datetime.date
