"""The expression language: parsing (round trip), friendly errors, evaluation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lwtool.expr import ast
from lwtool.expr.build import ToAst
from lwtool.expr.evaluate import evaluate, render
from lwtool.expr.functions import FUNCTIONS, EvaluationError
from lwtool.expr.parser import ExprSyntaxError, _parser, _simple_path, parse_expression
from lwtool.expr.printer import is_member_name, to_source
from lwtool.expr.refs import references, walked_references
from lwtool.expr.template import Part, parse_template

names = st.from_regex(r"[a-z_][a-z0-9_-]{0,6}", fullmatch=True).filter(is_member_name)
literals = st.builds(ast.Literal, st.none() | st.booleans() | st.integers(-1000, 1000)
                     | st.text(max_size=6))
leaves = st.builds(ast.Root, st.sampled_from(ast.ROOTS)) | literals


def _extend(inner: st.SearchStrategy[ast.Node]) -> st.SearchStrategy[ast.Node]:
    return (st.builds(ast.Member, inner, names)
            | st.builds(ast.Index, inner, inner)
            | st.builds(ast.Call, st.sampled_from(sorted(FUNCTIONS)),
                        st.lists(inner, max_size=3).map(tuple))
            | st.builds(ast.Array, st.lists(inner, max_size=3).map(tuple))
            | st.builds(ast.Compare, st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
                        inner, inner)
            | st.builds(ast.BoolOp, st.sampled_from(["and", "or"]),
                        st.lists(inner, min_size=2, max_size=3).map(tuple))
            | st.builds(ast.Not, inner))


expressions = st.recursive(leaves, _extend, max_leaves=12)


def _normal(node: ast.Node) -> ast.Node:
    """Flatten nested same-operator BoolOps (a or (b or c) prints as a or b or c)."""
    if isinstance(node, ast.BoolOp):
        flat: list[ast.Node] = []
        for operand in node.operands:
            operand = _normal(operand)
            if isinstance(operand, ast.BoolOp) and operand.op == node.op:
                flat.extend(operand.operands)
            else:
                flat.append(operand)
        return ast.BoolOp(node.op, tuple(flat))
    if isinstance(node, ast.Member):
        return ast.Member(_normal(node.target), node.name)
    if isinstance(node, ast.Index):
        return ast.Index(_normal(node.target), _normal(node.index))
    if isinstance(node, ast.Call):
        return ast.Call(node.name, tuple(_normal(a) for a in node.args))
    if isinstance(node, ast.Array):
        return ast.Array(tuple(_normal(a) for a in node.items))
    if isinstance(node, ast.Compare):
        return ast.Compare(node.op, _normal(node.left), _normal(node.right))
    if isinstance(node, ast.Not):
        return ast.Not(_normal(node.operand))
    return node


@given(expressions)
def test_round_trip(node: ast.Node) -> None:
    text = to_source(node)
    assert _normal(parse_expression(text)) == _normal(node), text


@given(st.lists(names, min_size=1, max_size=5).map(".".join).filter(
    lambda t: t.split(".")[0] not in {"and", "or", "not", "true", "false", "null"}))
def test_fast_path_matches_lark(text: str) -> None:
    fast = _simple_path(text)
    slow = ToAst().transform(_parser().parse(text))
    assert fast == slow and (fast.start, fast.end) == (slow.start, slow.end)


@given(st.lists(names, max_size=4).map(lambda rest: ".".join(["steps", *rest]))
       | st.lists(names, min_size=1, max_size=4).map(".".join), st.integers(0, 40))
def test_references_of_a_dotted_path_are_those_of_the_walk(text: str, offset: int) -> None:
    part = Part(text, _simple_path(text) or parse_expression(text), offset)
    assert references(part) == walked_references(part), text


def _walk_by_children(node: ast.Node) -> list[ast.Node]:
    out, todo = [], [node]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(reversed(ast.children(current)))
    return out


@given(expressions)
def test_walk_visits_parents_before_children_left_to_right(node: ast.Node) -> None:
    assert [id(n) for n in ast.walk(node)] == [id(n) for n in _walk_by_children(node)]


@given(expressions, st.integers(0, 40))
def test_references_of_any_expression_are_those_of_the_walk(node: ast.Node,
                                                            offset: int) -> None:
    text = to_source(node)
    part = Part(text, parse_expression(text), offset)
    assert references(part) == walked_references(part), text


@pytest.mark.parametrize(("text", "message"), [
    ("a = b", "'=' is not an operator; compare with '=='"),
    ("a && b", "'&&' is not an operator; use 'and'"),
    ("a + 1", "there is no arithmetic in expressions"),
    ("(a", "a parenthesis or bracket is not closed"),
    ("a )", "a closing parenthesis or bracket has no opening one"),
    ("a b", "two values stand side by side without an operator between them"),
    ("a < b < c", "comparisons cannot be chained; join them with 'and'"),
    ("", "the expression is empty"),
    # a template filter gets the call to write (it said "'||' is not an operator")
    ("x | contains('bug')", "filters ('| contains') are not supported; call the function: "
                            "contains(x, 'bug')"),
    ("input.name | lower", "filters ('| lower') are not supported; call the function: "
                           "lower(input.name)"),
    ("a || b", "'||' is not an operator; use 'or'"),
    ("a | ", "'|' is not an operator; use 'or' to join conditions"),
])
def test_friendly_syntax_messages(text: str, message: str) -> None:
    with pytest.raises(ExprSyntaxError) as info:
        parse_expression(text)
    assert info.value.message == message


@pytest.mark.parametrize("text", ["(" * 40 + "a" + ")" * 40, "x" * 5000, "not " * 40 + "a"])
def test_pathological_expressions_are_bounded(text: str) -> None:
    with pytest.raises(ExprSyntaxError) as info:
        parse_expression(text)
    assert info.value.code == "expr.too_complex"


def test_unclosed_template() -> None:
    with pytest.raises(ExprSyntaxError) as info:
        parse_template("hello {{ input.name")
    assert info.value.offset == 6


def test_braces_inside_string_literals_are_text() -> None:
    template = parse_template('{{ coalesce(input.x, "}}") }}')
    assert template.is_single


SCOPE = {
    "input": {"name": "Ada", "n": 3, "tags": ["a", "b"], "empty": "", "obj": {"k": 1}},
    "steps": {"fetch": {"output": {"score": 0.9, "items": [1, 2]}}},
    "item": {"id": "c1"},
}


@pytest.mark.parametrize(("text", "value"), [
    ("{{ input.n }}", 3),
    ("{{ input.obj }}", {"k": 1}),
    ("Hi {{ input.name }}, {{ input.n }} tags: {{ input.tags }}", 'Hi Ada, 3 tags: ["a","b"]'),
    ("{{ steps.fetch.output.score >= 0.8 }}", True),
    ("{{ input.missing.deeper }}", None),
    ("{{ coalesce(input.missing, 'x') }}", "x"),
    ("{{ input.n == 3 and not input.empty }}", True),
    ("{{ true == 1 }}", False),
    ("{{ input.tags[1] }}", "b"),
    ("{{ input.tags[5] }}", None),
    ("{{ length(steps.fetch.output.items) }}", 2),
    ("{{ join(input.tags, '-') }}", "a-b"),
    ("{{ contains(input.tags, 'a') }}", True),
    ("{{ keys(input.obj) }}", ["k"]),
    ("{{ upper(item.id) }}", "C1"),
    ("{{ json(input.obj) }}", '{"k":1}'),
    ("{{ sha256('abc') }}", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
])
def test_evaluation(text: str, value: object) -> None:
    assert render(parse_template(text), SCOPE) == value


@pytest.mark.parametrize("text", ["{{ input.n < 'a' }}", "{{ length(1) }}",
                                  "{{ upper(input.n) }}", "{{ workflow.x }}"])
def test_evaluation_errors(text: str) -> None:
    with pytest.raises(EvaluationError):
        evaluate(parse_template(text).parts[0].node, SCOPE)  # type: ignore[arg-type]
