"""WorkflowDefinitionHash: stable across spelling, changed by identity-bearing fields."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from lwtool.authoring.snapshot import definition_hash
from tests.conftest import run_cli

DEFINITION: dict[str, Any] = {
    "apiVersion": "littleworkflow.dev/v0.1",
    "kind": "WorkflowDefinition",
    "id": "candidate.review",
    "description": "Review candidates.",
    "input": {"schema": {"type": "object", "properties": {"job": {"type": "string"}}}},
    "models": [{"model": "openai/gpt-4o-mini"}],
    "tools": ["fetchCandidates", "parsePdf"],
    "planner": {"model": "openai/gpt-5", "system": "Design review workflows."},
}


def _changed(**edits: Any) -> str:
    changed = copy.deepcopy(DEFINITION)
    for key, value in edits.items():
        section, _, field = key.partition("__")
        if field:
            changed[section][field] = value
        else:
            changed[section] = value
    return definition_hash(changed)


def test_stable_across_key_order_and_tool_order() -> None:
    reordered = dict(reversed(list(copy.deepcopy(DEFINITION).items())))
    reordered["tools"] = ["parsePdf", "fetchCandidates"]
    assert definition_hash(reordered) == definition_hash(DEFINITION)


def test_identity_bearing_fields_change_it() -> None:
    base = definition_hash(DEFINITION)
    assert _changed(planner__system="Something else.") != base
    assert _changed(planner__model="openai/gpt-4o") != base
    assert _changed(models=[{"model": "openai/gpt-4o"}]) != base
    assert _changed(tools=["fetchCandidates"]) != base
    assert _changed(input={"schema": {"type": "object"}}) != base
    assert _changed(memory={"workflow": "ro"}) != base


def test_cli_hash_and_lock_of_a_definition(tmp_path: Path) -> None:
    path = tmp_path / "review.workflow.json"
    path.write_text(json.dumps(DEFINITION))
    digest = run_cli("hash", str(path)).stdout.strip()
    assert digest == definition_hash(DEFINITION)
    assert run_cli("lock", str(path)).returncode == 0
    lock = json.loads((tmp_path / "review.workflow.lock.json").read_text())
    assert lock["workflowDefinitionHash"] == digest and lock["documentKind"] == \
        "WorkflowDefinition"
    assert run_cli("check", str(path)).returncode == 0
