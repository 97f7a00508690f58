"""Every rule's docstring is its documentation, and its examples run: the *Example*
yields the rule's code, the *Instead* yields nothing at all. The findings of each
*Example* are a reviewed snapshot."""

from __future__ import annotations

import json
import re

import pytest
from ruamel.yaml import YAML

from lwtool.source.loader import load_text
from lwtool.validate.registry import Rule, rules
from lwtool.validate.run import validate_document
from tests.conftest import MINIMAL_HEADER, permitted

HEADINGS = ("## What it flags", "## Why", "## Example", "## Instead")
_BLOCK = re.compile(r"## (Example|Instead)\n```yaml\n(.*?)```", re.S)


def _examples(rule: Rule) -> dict[str, str]:
    return {label: body for label, body in _BLOCK.findall(rule.doc)}


def _document(snippet: str) -> str:
    """A snippet with only some top-level keys becomes a full LWIR document (YAML: the
    header is prepended, so the snippet's own lines keep their positions shifted only
    by the header)."""
    parsed = YAML(typ="safe", pure=True).load(snippet)
    # The header permits the tools the snippet calls (one line, so positions only shift
    # by the header's line count); a snippet with its own `permissions` keeps them.
    values = permitted({**MINIMAL_HEADER, "steps": parsed.get("steps") or []})
    del values["steps"]
    header = "".join(f"{k}: {json.dumps(v)}\n" for k, v in values.items()
                     if k not in parsed and "apiVersion" not in parsed)
    return header + snippet


RULES = rules()


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_docstring_has_the_headings(rule: Rule) -> None:
    for heading in HEADINGS:
        assert heading in rule.doc, f"{rule.code}: missing {heading}"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_example_is_flagged(rule: Rule, snapshot) -> None:  # type: ignore[no-untyped-def]
    text = _document(_examples(rule)["Example"])
    findings = validate_document(load_text(text, f"{rule.code}.yaml"))
    assert rule.code in {f.code for f in findings}, [f.as_text() for f in findings]
    assert [f.as_text() for f in findings] == snapshot


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_instead_is_clean(rule: Rule) -> None:
    text = _document(_examples(rule)["Instead"])
    findings = validate_document(load_text(text, f"{rule.code}.yaml"))
    assert findings == [], [f.as_text() for f in findings]
