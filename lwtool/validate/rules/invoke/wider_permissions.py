"""A child workflow may reach tools or model slots its parent does not grant.

## What it flags
A `workflow.invoke` whose child (or a descendant of it) lists in `permissions.tools`,
`permissions.models` or `permissions.secrets` something the invoking workflow's own
`permissions` do not list, or in `permissions.network` a host pattern none of the
parent's covers.

## Why
A child run may reach only what its parent may: whoever reviews a parent sees in its
`permissions` every tool and model slot a run of it can reach, children included.

## Example
```yaml
permissions: {tools: [publish], models: []}
steps:
  - id: polish
    uses: workflow.invoke
    with:
      workflow: ./examples/refine-loop.lwir.yaml
      input: {text: "{{ input.text }}"}
```

## Instead
```yaml
permissions: {tools: [improve, checkText, publish], models: []}
steps:
  - id: polish
    uses: workflow.invoke
    with:
      workflow: ./examples/refine-loop.lwir.yaml
      input: {text: "{{ input.text }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.children import invoked_children
from lwtool.validate.context import Context
from lwtool.validate.invokes import wider_grants

CODE = "invoke.wider_permissions"
_NOUNS = {"tools": "tool", "models": "model slot", "secrets": "secret",
          "network": "host pattern"}


def check(ctx: Context) -> Iterator[Finding]:
    for pointer, _, child, locked in invoked_children(ctx):
        for kind, names in wider_grants(ctx.value, child, locked.children).items():
            what = _NOUNS[kind]
            yield ctx.finding(f"{pointer}/workflow", (
                f"the child workflow reaches {what}{'s' if len(names) > 1 else ''} "
                f"{', '.join(names)}, which this workflow's permissions.{kind} do not "
                "grant (a child may reach only what its parent may)"))
