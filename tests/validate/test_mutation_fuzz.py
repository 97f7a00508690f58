"""No document makes the validator raise: mutate the valid examples (replace any value
with another JSON type, delete or duplicate keys, nest deeper) and every rule copes,
giving findings or a clean result, never an exception. A mutant that validates must
also canonicalize and hash."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lwtool.canonical.digest import workflow_version_id
from lwtool.source.finding import Severity
from lwtool.source.loader import LoadFailed, load_path, load_text
from lwtool.validate.run import validate_document
from tests.conftest import ROOT

SOURCES = sorted([*(p for p in ROOT.glob("examples/*.lwir.*") if ".lock." not in p.name),
                  *(p for p in ROOT.glob("examples/*.definition.*") if ".lock." not in p.name),
                  *(ROOT / "tests" / "conformance" / "spec_examples").glob("*.json"),
                  *(ROOT / "tests" / "runtime" / "workflows").glob("*.lwir.yaml")])
DOCUMENTS = [load_path(p).value for p in SOURCES]
OTHER_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**60, 2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8), st.just("{{ steps.x.output }}"), st.just("{{ item"),
    st.just("\ud800"), st.just("x\udfff{{ input.a }}"),
    st.just([]), st.just({}), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.sampled_from(["id", "uses", "mode", "steps"]), st.integers(),
                    max_size=2))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*prefix, index))
    return found


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _mutate(doc: Any, data: st.DataObject) -> tuple[Any, list[str]]:
    """Apply 1..4 mutations; returns the mutant and the duplicated keys to write twice."""
    duplicates: list[str] = []
    for _ in range(data.draw(st.integers(1, 4))):
        paths = _paths(doc)
        path = data.draw(st.sampled_from(paths))
        kind = data.draw(st.sampled_from(["replace", "delete", "duplicate", "nest",
                                          "wrap-step"]))
        if not path:
            doc = data.draw(OTHER_VALUES) if kind == "replace" else doc
            continue
        parent, key = _get(doc, path[:-1]), path[-1]
        if kind == "replace":
            parent[key] = data.draw(OTHER_VALUES)
        elif kind == "delete":
            del parent[key]
        elif kind == "duplicate" and isinstance(key, str):
            duplicates.append(key)
        elif kind == "nest":
            depth = data.draw(st.integers(1, 70))
            value = parent[key]
            for _level in range(depth):
                value = data.draw(st.sampled_from([[value], {"steps": [value]}]))
            parent[key] = value
        elif kind == "wrap-step" and isinstance(parent, list) and isinstance(parent[key],
                                                                              dict):
            step = parent[key]
            for level in range(data.draw(st.integers(1, 70))):
                step = {"id": f"wrap{level}", "uses": "parallel",
                        "with": {"items": "{{ input.items }}", "maxBranches": 2,
                                 "maxConcurrency": 1}, "steps": [step]}
            parent[key] = step
    return doc, duplicates


def _text(value: Any, duplicates: list[str]) -> str:
    """JSON text of the mutant, each duplicated key written twice where it first occurs
    (once each: doubling every occurrence of a nested key would grow exponentially)."""
    if isinstance(value, dict):
        pairs = []
        for key, child in value.items():
            pair = f"{json.dumps(key)}: {_text(child, duplicates)}"
            if key in duplicates:
                duplicates.remove(key)
                pairs.append(pair)
            pairs.append(pair)
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_text(child, duplicates) for child in value) + "]"
    return json.dumps(value, ensure_ascii=False)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_documents_never_raise(data: st.DataObject) -> None:
    doc = copy.deepcopy(data.draw(st.sampled_from(DOCUMENTS)))
    mutant, duplicates = _mutate(doc, data)
    try:
        document = load_text(_text(mutant, duplicates), "mutant.json")
    except LoadFailed as failed:  # not loadable: that is a finding with a position
        assert failed.findings and all(f.span.start.line >= 1 for f in failed.findings)
        return
    findings = validate_document(document)
    if document.value is not None and not any(f.severity is Severity.ERROR for f in findings):
        assert workflow_version_id(document.value).startswith("sha256:")


def test_the_sources_are_valid() -> None:
    assert len(SOURCES) >= 12
    for path in SOURCES:
        assert validate_document(load_path(Path(path))) == [], path


def _deep_parallel(levels: int) -> dict[str, Any]:
    step: dict[str, Any] = {"id": "leaf", "uses": "tool.call", "with": {"tool": "t"}}
    for level in range(levels):
        step = {"id": f"p{level}", "uses": "parallel", "with": {
            "items": "{{ input.xs }}", "maxBranches": 2, "maxConcurrency": 1}, "steps": [step]}
    return {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "deep"}, "permissions": {"tools": ["t"]}, "steps": [step]}


def test_deeply_nested_parallel_validates_or_is_too_large() -> None:
    assert validate_document(load_text(json.dumps(_deep_parallel(100)), "d.json")) == []
    broken = _deep_parallel(100)
    broken["steps"][0]["bogus"] = 1
    assert [f.code for f in validate_document(load_text(json.dumps(broken), "d.json"))] == [
        "lwir.invalid_field"]
    # deeper than the 256-level limit: one finding, whichever way the JSON loads
    try:
        document = load_text(json.dumps(_deep_parallel(140)), "d.json")
    except LoadFailed as failed:
        assert [f.code for f in failed.findings] == ["parse.too_large"]
    else:  # pragma: no cover - the fast path must refuse it too
        raise AssertionError(f"loaded: {validate_document(document)}")


def test_an_output_mode_that_is_a_list_is_a_finding() -> None:
    doc = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow", "metadata": {"name": "m"},
           "permissions": {"tools": ["t"]}, "steps": [
               {"id": "a", "uses": "tool.call", "with": {"tool": "t"},
                "output": {"mode": ["text"], "schema": {"type": "string"}}}]}
    codes = {f.code for f in validate_document(load_text(json.dumps(doc), "m.json"))}
    assert codes == {"lwir.invalid_field"}
