"""Where the validator finds templates (Context.templates): every string holding `{{`
in a step's `input` and `with`, at its JSON Pointer, code.run's `with.files` left out;
held against a plain recursive walk for values of every shape."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from lwtool.source import pointer as jp
from lwtool.source.loader import load_text
from lwtool.validate.context import Context


def _walk(value: Any, pointer: str, skip: str | None = None) -> set[tuple[str, str]]:
    if isinstance(value, str):
        return {(pointer, value)} if "{{" in value else set()
    if isinstance(value, dict):
        return {site for key, item in value.items() if key != skip
                for site in _walk(item, f"{pointer}/{jp.escape(key)}")}
    if isinstance(value, list):
        return {site for index, item in enumerate(value)
                for site in _walk(item, f"{pointer}/{index}")}
    return set()


def _sites(steps: list[dict[str, Any]]) -> set[tuple[str, str]]:
    doc = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
           "metadata": {"name": "t"}, "steps": steps}
    context = Context(load_text(json.dumps(doc), "t.json"), "lwir")
    return {(site.pointer, site.value) for site in context.templates}


_TEXT = st.sampled_from(["plain", "{{ input.x }}", "a {{ steps.s.output }} b", "{{", "}}"])
_KEY = st.sampled_from(["a", "b/c", "d~e", "files", "{{ k }}"])
_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | _TEXT,
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(_KEY, inner, max_size=3), max_leaves=30)


@given(_VALUE, _VALUE, st.sampled_from(["tool.call", "code.run"]))
@example("{{ input.x }}", {"files": "{{ input.y }}", "a": ["{{ steps.s.output }}"]},
         "code.run")
@example([{"files": "{{ input.x }}"}], {"a": {"files": ["{{ input.y }}"]}}, "code.run")
@example(3, "{{ input.x }}", "tool.call")
def test_every_template_string_is_a_site_at_its_pointer(input_: Any, with_: Any,
                                                         uses: str) -> None:
    step = {"id": "s", "uses": uses, "input": input_, "with": with_}
    skip = "files" if uses == "code.run" else None
    expected = _walk(input_, "/steps/0/input") | _walk(with_, "/steps/0/with", skip)
    assert _sites([step]) == expected


def test_a_parallel_body_step_has_its_own_sites() -> None:
    body = {"id": "b", "uses": "tool.call", "with": {"tool": "t"},
            "input": "{{ item }}"}
    outer = {"id": "p", "uses": "parallel", "with": {"items": "{{ input.xs }}"},
             "steps": [body]}
    assert _sites([outer]) == {("/steps/0/with/items", "{{ input.xs }}"),
                               ("/steps/0/steps/0/input", "{{ item }}")}
