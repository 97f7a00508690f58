"""Fuzz: hostile planner replies and hostile skill files never end in an unexpected
exception (hardening round 3 extends tests/runtime/test_hostile_fuzz.py).

1. A planner submits any JSON value, or a valid draft mutated at random (any field set
   to any value, deep nesting, huge strings, foreign tools, models and sandboxes):
   checking it gives findings or a valid draft inside the definition's grant, never an
   exception, and a draft that is accepted asks for nothing the grant does not give.
2. A SKILL.md holds any text (random frontmatter, nesting, sizes, control characters):
   loading it gives a skill or a SkillError, never another exception.

The example count comes from LWTOOL_FUZZ_EXAMPLES (default 150)."""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lwtool.harness.skills import SkillError, load_skill
from lwtool.planner.grant import Grant, excesses
from lwtool.planner.repair import check_draft
from tests.planner.test_compile_loop import DEFINITION, GOOD

EXAMPLES = int(os.environ.get("LWTOOL_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
GRANT = Grant.of(DEFINITION)

_leaf = st.one_of(st.none(), st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
                  st.floats(allow_nan=False), st.text(max_size=8),
                  st.sampled_from(["readSecret", "planner", "openai/gpt-4o", "allow", "read",
                                   "code.run", "{{ steps.x.output }}", "\ud800"]))
_json = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=20)
_paths = st.sampled_from([
    ["permissions", "tools"], ["permissions", "models"], ["steps", 0, "with", "tool"],
    ["steps", 1, "with", "model"], ["steps", 0, "uses"], ["steps", 1, "needs"],
    ["steps", 0, "with", "sandbox"], ["steps"], ["input"], ["kind"], ["steps", 1, "output"]])


def _set(document: dict[str, Any], path: list[Any], value: Any) -> None:
    target: Any = document
    for key in path[:-1]:
        if isinstance(target, dict):
            target = target.setdefault(key, {})
            if not isinstance(target, (dict, list)):
                return
        elif isinstance(target, list) and isinstance(key, int) and key < len(target):
            target = target[key]
        else:
            return
    last = path[-1]
    if isinstance(target, dict):
        target[last] = value
    elif isinstance(target, list) and isinstance(last, int) and last < len(target):
        target[last] = value


def _check(draft: Any) -> None:
    result = check_draft(draft, GRANT)
    for finding in result.findings:
        assert isinstance(finding["code"], str) and isinstance(finding["pointer"], str)
        json.dumps(finding)  # what the model is sent must be JSON
    if result.ok:
        assert excesses(result.lwir, GRANT) == []


@FUZZ
@given(_json)
def test_any_planner_submission_gives_findings_or_a_granted_draft(value: Any) -> None:
    _check(value)


@FUZZ
@given(st.lists(st.tuples(_paths, _json), min_size=1, max_size=4), st.integers(0, 300))
def test_mutated_drafts_give_findings_or_a_granted_draft(edits: list[Any], depth: int) -> None:
    draft = copy.deepcopy(GOOD)
    for path, value in edits:
        _set(draft, path, value)
    nested: Any = "x"
    for _ in range(depth):
        nested = [nested]
    draft.setdefault("metadata", {})["deep"] = nested
    _check(draft)


_frontmatter_text = st.one_of(
    st.text(max_size=300),
    st.builds(lambda name, desc, extra: f"---\nname: {name}\ndescription: {desc}\n{extra}---\n",
              st.text(max_size=20), st.text(max_size=40), st.text(max_size=60)),
    st.builds(lambda depth: "---\nname: x\ndescription: d\nk: " + "[" * depth + "]" * depth
              + "\n---\n", st.integers(0, 30_000)),
    st.builds(lambda size: "---\nname: x\ndescription: " + "y" * size + "\n---\n",
              st.integers(0, 200_000)))


@FUZZ
@given(_frontmatter_text)
def test_any_skill_file_gives_a_skill_or_a_skill_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "skill"
        folder.mkdir()
        (folder / "SKILL.md").write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            skill = load_skill(str(folder), Path(tmp) / "cache")
        except SkillError:
            return
        assert skill.name and skill.description
