"""Every finding code lwtool reports, and the rules that report them.

Codes are never reused; a renamed code stays in REDIRECTS (old -> new) so that
suppressions and scripts written against the old name keep working.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lwtool.source.finding import Finding
    from lwtool.validate.context import Context

# Rule modules under lwtool/validate/rules/, in the order they run.
RULE_MODULES: tuple[str, ...] = (
    "lwir.invalid_field",
    "step.unknown_type",
    "step.duplicate_id",
    "step.max_visits_out_of_range",
    "step.missing_dependency",
    "step.sensitive_flow",
    "lwir.invalid_cycle",
    "lwir.output_ambiguous_for_multi_visit",
    "decision.target_out_of_scope",
    "decision.output_not_allowed",
    "decision.invalid_when",
    "parallel.max_branches_out_of_range",
    "parallel.max_concurrency_out_of_range",
    "parallel.invalid_item_key",
    "parallel.invalid_output_step",
    "parallel.reference_outside_body",
    "permissions.unknown_model",
    "permissions.unknown_tool",
    "permissions.unknown_secret",
    "permissions.invalid_host",
    "code.missing_entrypoint",
    "code.pin_mismatch",
    "code.network_without_hosts",
    "schema.invalid",
    "schema.unimplemented_field",
    "expr.syntax",
    "expr.too_complex",
    "expr.unknown_function",
    "expr.wrong_arity",
    "expr.unknown_root",
    "expr.invalid_step_reference",
    "expr.item_outside_parallel",
    "output.schema_mismatch",
    "output.duplicate_choice",
    "lwir.duplicate_model_slot",
    "lwir.not_canonicalizable",
    "definition.plan_is_itself",
    "definition.invalid_skill_source",
    "definition.ignored_with_fixed_plan",
    "pipeline.invalid_workflow",
    "invoke.child_invalid",
    "invoke.cycle",
    "invoke.wider_permissions",
    "invoke.schema_mismatch",
    "map.out_of_range",
    "step.repair_model",
)

# Codes made outside the rule modules: by the loader, the dispatcher and `check`.
OTHER_CODES: dict[str, str] = {
    "parse.invalid": "the file is not valid YAML or JSON (or is empty, binary, not UTF-8)",
    "parse.duplicate_key": "a mapping has the same key twice",
    "parse.unsafe_tag": "a YAML tag other than the core schema's (e.g. !!python/object)",
    "parse.too_large": "size, nesting depth or alias expansion is over its limit",
    "lwir.unknown_kind": "the file is neither LWIR (kind: Workflow) nor a WorkflowDefinition",
    "lock.stale": "the committed LWIR no longer matches its lock",
    "lock.missing": "an LWIR file has no lock beside it",
    "lock.invalid": "the lock file is not a valid lwtool lock",
    "generate.stale": "a generated file no longer matches what its generator gives",
    "grant.tool": "a planner's draft lists a tool its definition does not declare",
    "grant.model": "a planner's draft lists a model slot its definition does not have",
    "grant.secret": "a planner's draft lists a secret its definition does not declare",
    "grant.network": "a planner's draft lists a host pattern its definition's network "
                     "does not cover",
    "portable.extension": "a use of an lwtool extension, outside the spec's portable LWIR "
                          "(`lwtool validate --portable`)",
    "tools.unavailable": "a declared tool is not provided by `lwtool validate --tools`",
    "tools.network_unenforced": "a tool.call of a tool lwtool cannot hold to "
                                "permissions.network (a Python tool, a stdio MCP server)",
    "grant.sandbox": "a planner's draft asks for a code.run sandbox wider than its "
                     "definition's planner.maxCodeSandbox",
}

REDIRECTS: dict[str, str] = {}


@dataclass(frozen=True)
class Rule:
    code: str
    module: ModuleType
    applies_to: tuple[str, ...]
    check: Callable[[Context], Iterator[Finding]]

    @property
    def doc(self) -> str:
        return self.module.__doc__ or ""


@cache
def rules() -> tuple[Rule, ...]:
    loaded = []
    for name in RULE_MODULES:
        module = importlib.import_module(f"lwtool.validate.rules.{name}")
        loaded.append(Rule(module.CODE, module, getattr(module, "APPLIES_TO", ("Workflow",)),
                           module.check))
    return tuple(loaded)


def all_codes() -> dict[str, str]:
    """Every code -> its one-line summary (the first docstring line for rules)."""
    codes = {rule.code: rule.doc.strip().splitlines()[0] for rule in rules()}
    codes.update(OTHER_CODES)
    return dict(sorted(codes.items()))


def rule_help() -> dict[str, tuple[str, str]]:
    """Every code -> (its one-line summary, its explanation in Markdown: what it flags,
    why, an example and what to write instead, from the rule's docstring, or from
    lwtool.validate.other_codes for codes outside the rule modules)."""
    from lwtool.validate.other_codes import OTHER_HELP

    helped = {code: (text, OTHER_HELP.get(code, text)) for code, text in OTHER_CODES.items()}
    for rule in rules():
        summary, _, body = rule.doc.strip().partition("\n")
        helped[rule.code] = (summary.strip(), body.strip() or summary.strip())
    return dict(sorted(helped.items()))
