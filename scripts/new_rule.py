"""Start a new validator rule: `python scripts/new_rule.py FAMILY NAME`.

Writes lwtool/validate/rules/FAMILY/NAME.py (docstring with the four headings and a
failing/passing example to fill in) and adds it to RULE_MODULES in the registry. The
rule-doc tests fail until the examples are real; then regenerate docs/rules.md and
accept the snapshot (`pytest --snapshot-update`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = '''"""TODO: one line naming the problem.

## What it flags
TODO

## Why
TODO

## Example
```yaml
steps:
  - {{id: a, uses: tool.call, with: {{tool: t}}}}
```

## Instead
```yaml
steps:
  - {{id: a, uses: tool.call, with: {{tool: t}}}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.validate.context import Context
from lwtool.source.finding import Finding

CODE = "{family}.{name}"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        if False:  # TODO: the condition
            yield ctx.finding(info.pointer, "TODO: the message")
'''


def main() -> int:
    if len(sys.argv) != 3 or not all(re.fullmatch(r"[a-z][a-z_]*", a) for a in sys.argv[1:]):
        sys.stderr.write("usage: scripts/new_rule.py FAMILY NAME (lower_snake_case)\n")
        return 2
    family, name = sys.argv[1:]
    folder = ROOT / "lwtool" / "validate" / "rules" / family
    module = folder / f"{name}.py"
    if module.exists():
        sys.stderr.write(f"{module} already exists\n")
        return 2
    folder.mkdir(exist_ok=True)
    (folder / "__init__.py").touch()
    module.write_text(TEMPLATE.format(family=family, name=name), encoding="utf-8")
    registry = ROOT / "lwtool" / "validate" / "registry.py"
    text = registry.read_text(encoding="utf-8")
    text = text.replace("\n)\n\n# Codes made outside", f'\n    "{family}.{name}",\n)\n\n'
                        "# Codes made outside", 1)
    registry.write_text(text, encoding="utf-8")
    print(f"wrote {module.relative_to(ROOT)} and registered {family}.{name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
