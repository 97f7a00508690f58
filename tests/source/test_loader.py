"""The loader: positions for every key and item, and bad input as findings in bounded
time and memory, never a traceback."""

from __future__ import annotations

import time

import pytest

from lwtool.source.loader import MAX_FILE_BYTES, LoadFailed, load_bytes, load_text


def _fail(text: str | bytes, name: str) -> tuple[str, int, int, str]:
    started = time.perf_counter()
    with pytest.raises(LoadFailed) as info:
        if isinstance(text, bytes):
            load_bytes(text, name)
        else:
            load_text(text, name)
    assert time.perf_counter() - started < 10  # bounded, not a benchmark
    finding = info.value.findings[0]
    return finding.code, finding.line, finding.column, finding.message


BILLION_LAUGHS = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join(["*" + chr(97 + i)] * 9) + "]\n"
    for i in range(9))


@pytest.mark.parametrize(("name", "text", "code", "line", "column"), [
    ("x.yaml", "a: 1\n  b: 2\n", "parse.invalid", 2, 4),
    ("x.json", '{"a": [1,]}', "parse.invalid", 1, 10),
    ("x.json", '{"a" 1}', "parse.invalid", 1, 6),
    ("x.json", '{"a": 1} x', "parse.invalid", 1, 10),
    ("x.json", '{"a": NaN}', "parse.invalid", 1, 7),
    ("x.yaml", "a: .inf\n", "parse.invalid", 1, 4),
    ("x.yaml", "", "parse.invalid", 1, 1),
    ("x.json", "   \n", "parse.invalid", 1, 1),
    ("x.yaml", "a: b\n---\nc: d\n", "parse.invalid", 2, 1),
    ("x.yaml", "a: !!python/object:os.system x\n", "parse.unsafe_tag", 1, 4),
    ("x.yaml", "a: !!python/object/apply:os.system [ls]\n", "parse.unsafe_tag", 1, 4),
    ("x.yaml", "a: !custom {b: 1}\n", "parse.unsafe_tag", 1, 4),
    ("x.yaml", "a: &x [*x]\n", "parse.invalid", 1, 8),
    ("x.yaml", "a: *nothing\n", "parse.invalid", 1, 4),
    ("x.yaml", "? [a]\n: b\n", "parse.invalid", 1, 3),
    ("x.yaml", BILLION_LAUGHS, "parse.too_large", 7, 8),
    ("x.json", "[" * 100_000 + "]" * 100_000, "parse.too_large", 1, 257),
    ("x.yaml", "[" * 100_000 + "]" * 100_000, "parse.too_large", 1, 257),
    ("x.yaml", "a:\n" + "".join("  " * i + "- \n" for i in range(1, 400)),
     "parse.too_large", 257, 513),
])
def test_bad_input_is_a_finding(name: str, text: str, code: str, line: int, column: int) -> None:
    got = _fail(text, name)
    assert got[:3] == (code, line, column), got


def test_binary_file() -> None:
    code, line, column, message = _fail(b"\x89PNG\r\n\x1a\n\x00\x00", "x.yaml")
    assert (code, line) == ("parse.invalid", 3) and "binary" in message


def test_not_utf8() -> None:
    code, line, column, message = _fail("a: 'caf\u00e9'\n".encode("latin-1"), "x.yaml")
    assert (code, line, column) == ("parse.invalid", 1, 8) and "UTF-8" in message


def test_huge_file_is_refused_without_parsing() -> None:
    data = b"a: " + b"x" * (50 * 1024 * 1024) + b"\n"
    code, line, column, message = _fail(data, "big.yaml")
    assert code == "parse.too_large" and str(MAX_FILE_BYTES // (1024 * 1024)) in message


@pytest.mark.parametrize(("name", "text"), [
    ("x.yaml", "a: 1\nb: 3\na: 2\n"),
    ("x.json", '{"a": 1,\n "b": 3,\n "a": 2}'),
])
def test_duplicate_keys_are_findings_and_later_wins(name: str, text: str) -> None:
    document = load_text(text, name)
    assert document.value == {"a": 2, "b": 3}
    [finding] = document.findings
    assert finding.code == "parse.duplicate_key" and finding.line == 3
    assert "first at line 1" in finding.message


def test_yaml_positions_for_keys_and_items() -> None:
    document = load_text("a: [1, {b: 2.5}]\nc: \"x\"\nd: yes\ne: [ü, 2]\n", "x.yaml")
    assert document.value == {"a": [1, {"b": 2.5}], "c": "x", "d": "yes", "e": ["ü", 2]}
    sm = document.source_map
    assert (sm.span("/a/1/b").start.line, sm.span("/a/1/b").start.column) == (1, 12)
    assert (sm.key_span("/a/1/b").start.column) == 9
    assert sm.get("/c").style == '"' and sm.get("/d").style == ""
    assert sm.span("/e/1").start.column == 8  # counts characters, not bytes
    assert sm.span("/a/9/zz") == sm.span("/a")  # unknown pointers fall back to the parent


def test_json_positions_are_built_on_demand() -> None:
    document = load_text('{\n  "a": [1, {"b": "é"}],\n  "c": true\n}', "x.json")
    sm = document.source_map
    assert (sm.span("/a/1/b").start.line, sm.span("/a/1/b").start.column) == (2, 18)
    assert sm.key_span("/c").start.column == 3


def test_aliases_are_copies() -> None:
    document = load_text("a: &x {k: [1]}\nb: *x\n", "x.yaml")
    document.value["a"]["k"].append(2)
    assert document.value["b"] == {"k": [1]}


def test_yaml_core_schema_scalars() -> None:
    document = load_text("a: 0x1f\nb: 1_000\nc: ~\nd: true\ne: 'true'\nf: 2001-12-14\n", "x.yaml")
    assert document.value == {"a": 31, "b": 1000, "c": None, "d": True, "e": "true",
                              "f": "2001-12-14"}
