"""Step input resolution: values rendered at every depth, and a failure's location."""

from __future__ import annotations

import pytest

from lwtool.record.errors import StepFailure
from lwtool.steps.inputs import resolve

SCOPE = {"input": {"name": "ada", "tags": ["x", "y"]}, "steps": {}}


def test_templates_render_at_every_depth_and_the_rest_is_kept() -> None:
    value = {"a": "{{ input.name }}", "b": [1, "{{ input.tags }}", {"c": "hi {{ input.name }}"}],
             "d": None, "e": 2.5, "f": True, "g": "plain"}
    assert resolve(value, SCOPE, "s1", "input") == {
        "a": "ada", "b": [1, ["x", "y"], {"c": "hi ada"}], "d": None, "e": 2.5, "f": True,
        "g": "plain"}


def test_subclassed_values_are_resolved_like_plain_ones() -> None:
    class Text(str):
        pass

    class Table(dict):  # type: ignore[type-arg]
        pass

    assert resolve(Table(k=[Text("{{ input.name }}")]), SCOPE, "s1", "input") == {"k": ["ada"]}


@pytest.mark.parametrize(("value", "where"), [
    ("{{ input.name + }}", "input"),
    ({"a": {"b": "{{ nope.x }}"}}, "input.a.b"),
    ({"a": [0, {"b": "{{ nope }}"}]}, "input.a[1].b"),
    ([["{{ input.name | }}"]], "input[0][0]"),
])
def test_a_failure_names_where_it_happened(value: object, where: str) -> None:
    with pytest.raises(StepFailure) as failed:
        resolve(value, SCOPE, "s1", "input")
    assert failed.value.message.startswith(f"{where}: ")
    assert failed.value.step_path == "s1"
    assert failed.value.cause == "step_failed"
