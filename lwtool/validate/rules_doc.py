"""The rules page (docs/rules.md), generated from the rule docstrings."""

from __future__ import annotations

from lwtool.validate.other_codes import OTHER_HELP
from lwtool.validate.registry import OTHER_CODES, rules


def render() -> str:
    out = ["# Finding codes", "",
           "Generated from the rule docstrings by `python -m lwtool.validate.rules_doc`; "
           "do not edit by hand (a test keeps it current).", ""]
    out += ["Codes outside the rule modules (found while loading a file, or by `lwtool "
            "check` and the planner's grant):", ""]
    for code, text in sorted(OTHER_CODES.items()):
        body = OTHER_HELP.get(code, "").replace("## ", "#### ")
        out += [f"## `{code}`", "", text[0].upper() + text[1:] + ".", "", body, ""]
    out += ["Codes of the rule modules, with what each flags, why, an example and what to "
            "write instead:"]
    for rule in sorted(rules(), key=lambda r: r.code):
        doc = rule.doc.strip()
        summary, _, body = doc.partition("\n")
        body = body.strip().replace("## ", "#### ")
        out += ["", f"## `{rule.code}`", "", summary, "", body]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(render())
