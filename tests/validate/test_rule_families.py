"""Rule families beyond the docstring examples: graph rules (cycles, the lastOutput
exemption), scopes (decisions and references in parallel bodies), expression
positions in every scalar style."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lwtool.source.loader import load_text
from lwtool.validate.rules.lwir import not_canonicalizable
from lwtool.validate.run import validate_document
from tests.conftest import MINIMAL_HEADER

HEADER = "".join(f"{k}: {json.dumps(v)}\n" for k, v in MINIMAL_HEADER.items())


def findings(steps_yaml: str) -> list[tuple[str, int, int, str]]:
    document = load_text(HEADER + steps_yaml, "t.yaml")
    return [(f.code, f.line, f.column, f.message) for f in validate_document(document)]


def codes(steps_yaml: str) -> list[str]:
    return [f[0] for f in findings(steps_yaml)]


LOOP = """steps:
  - id: worker
    uses: tool.call
    maxVisits: {worker}
    with: {{tool: t}}
    input: {{feedback: "{{{{ steps.review.lastOutput.feedback }}}}"}}
  - id: review
    uses: tool.call
    needs: [worker]
    maxVisits: 3
    with: {{tool: t}}
  - id: route
    uses: decision
    needs: [review]
    maxVisits: 3
    with:
      cases: [{{when: "{{{{ steps.review.lastOutput.ok }}}}", to: end}}]
      default: worker
"""


def test_loop_with_decision_and_visits_is_valid_and_exempt() -> None:
    assert findings(LOOP.format(worker=3)) == []


def test_loop_member_with_one_visit_is_named() -> None:
    [(code, line, column, message)] = findings(LOOP.format(worker=1))
    assert code == "lwir.invalid_cycle"
    assert (line, column) == (6, 9)  # the earliest step of the cycle, at its id
    assert "worker -> review -> route -> worker" in message and "'worker'" in message


def test_self_need_is_a_cycle() -> None:
    assert codes("steps:\n  - {id: a, uses: tool.call, needs: [a], with: {tool: t}}\n") == [
        "lwir.invalid_cycle"]


def test_each_cycle_reported_once() -> None:
    text = """steps:
  - {id: a, uses: tool.call, needs: [c], with: {tool: t}}
  - {id: b, uses: tool.call, needs: [a], with: {tool: t}}
  - {id: c, uses: tool.call, needs: [b], with: {tool: t}}
  - {id: x, uses: tool.call, needs: [y], with: {tool: t}}
  - {id: y, uses: tool.call, needs: [x], with: {tool: t}}
"""
    assert codes(text) == ["lwir.invalid_cycle", "lwir.invalid_cycle"]


def test_last_output_of_a_step_that_cannot_reach_the_reader_needs_needs() -> None:
    text = """steps:
  - {id: a, uses: tool.call, maxVisits: 2, with: {tool: t}}
  - id: b
    uses: tool.call
    with: {tool: t}
    input: "{{ steps.a.lastOutput }}"
"""
    assert codes(text) == ["step.missing_dependency"]


def test_output_of_a_multi_visit_step_is_ambiguous() -> None:
    text = LOOP.format(worker=3).replace("steps.review.lastOutput.ok", "steps.review.output.ok")
    assert codes(text) == ["lwir.output_ambiguous_for_multi_visit"]


PARALLEL = """steps:
  - {{id: top, uses: tool.call, with: {{tool: t}}}}
  - id: each
    uses: parallel
    needs: [top]
    with: {{items: "{{{{ input.rows }}}}", maxBranches: 5, maxConcurrency: 2}}
    steps:
      - {{id: top, uses: tool.call, with: {{tool: t}}}}
      - id: route
        uses: decision
        needs: [top]
        with: {{cases: [], default: {target}}}
"""


def test_same_id_in_different_scopes_is_fine() -> None:
    assert findings(PARALLEL.format(target="end")) == []


def test_decision_in_a_body_cannot_route_out() -> None:
    text = PARALLEL.format(target="each")
    [(code, _, _, message)] = findings(text)
    assert code == "decision.target_out_of_scope" and "parallel body" in message


def test_items_literal_beyond_max_branches() -> None:
    text = PARALLEL.format(target="end").replace('"{{ input.rows }}"', "[1, 2, 3, 4, 5, 6]")
    assert codes(text) == ["parallel.max_branches_out_of_range"]


def _column_of(text: str, needle: str) -> tuple[int, int]:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number, line.index(needle) + 1
    raise AssertionError(needle)


def test_expression_positions_in_every_scalar_style() -> None:
    styles: dict[str, Any] = {
        "plain": "      prompt: Go {{ steps.nope.output }}\n",
        "double": '      prompt: "Go \\t {{ steps.nope.output }}"\n',
        "single": "      prompt: 'it''s {{ steps.nope.output }}'\n",
        "literal": "      prompt: |\n        first line\n        then {{ steps.nope.output }}\n",
        "folded": "      prompt: >\n        first line\n        then {{ steps.nope.output }}\n",
    }
    for style, prompt in styles.items():
        text = ("steps:\n  - id: g\n    uses: ai.generate\n    with:\n"
                "      model: gpt-4o-mini\n" + prompt)
        [(code, line, column, _)] = findings(text)
        assert code == "step.missing_dependency", style
        assert (line, column) == _column_of(HEADER + text, "steps.nope"), style


def test_large_graphs_validate_in_bounded_time() -> None:
    """10,000 chained steps, each reading a far-away step's lastOutput: reachability
    is searched incrementally within a budget instead of once per reference."""
    import time

    steps = [{"id": f"s{i}", "uses": "tool.call", "with": {"tool": "t"},
              **({"needs": [f"s{i - 1}"]} if i else {}),
              "input": f"{{{{ steps.s{i // 2}.lastOutput }}}}"} for i in range(10_000)]
    doc = {**MINIMAL_HEADER, "steps": steps}
    started = time.perf_counter()
    validate_document(load_text(json.dumps(doc), "big.json"))
    assert time.perf_counter() - started < 30  # a bound, not a benchmark


def test_fields_of_another_step_type_are_named_with_the_type() -> None:
    text = """steps:
  - id: a
    uses: tool.call
    with: {tool: t}
    onFailure: {}
    retries: 3
  - id: d
    uses: decision
    input: 1
    output: {mode: text}
    with: {cases: [], default: end}
"""
    assert findings(text) == [
        ("lwir.invalid_field", 9, 5, "field 'onFailure' is not allowed on a tool.call step"),
        ("lwir.invalid_field", 10, 5, "unknown field 'retries'; did you mean 'retry'?"),
        ("lwir.invalid_field", 13, 5, "field 'input' is not allowed on a decision step"),
        ("decision.output_not_allowed", 14, 5,
         "a decision step has no output; it records only the target it chose"),
    ]


def test_a_nested_step_is_checked_against_its_own_type() -> None:
    text = """steps:
  - id: p
    uses: parallel
    with: {items: [1], maxBranches: 1, maxConcurrency: 1}
    steps:
      - {id: q, uses: tool.call, with: {tool: t, model: m}, timeoutMs: x}
"""
    assert findings(text) == [
        ("lwir.invalid_field", 10, 50, "unknown field 'model'"),
        ("lwir.invalid_field", 10, 72, "expected integer, got string"),
    ]


def test_a_step_without_a_known_type_gets_one_finding() -> None:
    text = """steps:
  - {id: a, with: {tool: t}}
  - {id: b, uses: nope, with: {}}
  - {id: c, uses: [tool.call], with: {tool: t}}
  - just text
"""
    assert codes(text) == ["lwir.invalid_field", "step.unknown_type", "lwir.invalid_field",
                           "lwir.invalid_field"]


def test_equal_bad_schemas_are_each_named_at_their_own_place() -> None:
    schema = "{type: object, properties: {a: {type: string, pattern: x}}}"
    got = [f for f in findings(f"""steps:
  - {{id: a, uses: tool.call, with: {{tool: t}}, output: {{mode: object, schema: {schema}}}}}
  - {{id: b, uses: tool.call, with: {{tool: t}}, output: {{mode: object, schema: {schema}}}}}
""") if f[0] == "schema.invalid"]
    assert [(line, "pattern" in message) for _, line, _, message in got] == [
        (len(MINIMAL_HEADER) + 2, True), (len(MINIMAL_HEADER) + 3, True)]


_OTHER = st.text(alphabet="xXg -\"é\udc00:", max_size=3)
_RUNS = st.text(alphabet="0123456789abcdefABCDEF_", min_size=10, max_size=18)


@given(st.lists(st.tuples(_OTHER, _RUNS), max_size=4).map(
    lambda pieces: "".join(other + run for other, run in pieces)))
def test_the_long_number_pre_check_finds_every_run_of_fourteen(text: str) -> None:
    expected = re.search(r"[0-9a-fA-F_]{14,}", text) is not None
    assert not_canonicalizable._long_number_run(text) == expected


def test_an_integer_beyond_the_exact_range_is_named() -> None:
    got = findings("steps:\n  - {id: a, uses: tool.call, with: {tool: t}, "
                   "input: {n: 9007199254740993, m: 1_000_000}}\n")
    assert [(code, "9007199254740993" in message) for code, _, _, message in got] == [
        ("lwir.not_canonicalizable", True)]
