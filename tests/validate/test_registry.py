"""Project-wide rules about rules: the module path is the code, codes are unique and
name the problem, every code is documented."""

from __future__ import annotations

from pathlib import Path

from lwtool.validate import registry

RULES_DIR = Path(registry.__file__).parent / "rules"
DISALLOWED_PREFIXES = ("prefer_", "use_", "avoid_", "do_not_", "require_")


def test_module_path_is_the_code() -> None:
    for rule in registry.rules():
        family, name = rule.code.split(".")
        assert Path(rule.module.__file__).relative_to(RULES_DIR) == Path(family, f"{name}.py")


def test_every_rule_module_is_registered() -> None:
    on_disk = {f"{p.parent.name}.{p.stem}" for p in RULES_DIR.glob("*/*.py")
               if p.stem != "__init__"}
    assert on_disk == set(registry.RULE_MODULES)


def test_codes_are_unique_and_name_the_problem() -> None:
    codes = [rule.code for rule in registry.rules()] + list(registry.OTHER_CODES)
    assert len(codes) == len(set(codes))
    for code in codes:
        assert not code.split(".")[1].startswith(DISALLOWED_PREFIXES), code
    assert not set(registry.REDIRECTS) & set(codes)


def test_every_code_has_a_summary() -> None:
    for code, summary in registry.all_codes().items():
        assert summary and not summary.startswith("#"), code


def test_rules_page_is_current() -> None:
    from lwtool.validate.rules_doc import render

    page = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
    assert page.read_text(encoding="utf-8") == render(), \
        "run: python -m lwtool.validate.rules_doc > docs/rules.md"
