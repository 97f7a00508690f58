"""An expression reads `item` outside a parallel body.

## What it flags
`{{ item }}` in a step that is not inside a parallel step's body (a parallel step's
own `itemKey` may read it, and a map step's; their `items` may not).

## Why
`item` is the current element of a parallel group; elsewhere there is none.

## Example
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "{{ item.id }}"}
```

## Instead
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "{{ input.id }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "expr.item_outside_parallel"


def check(ctx: Context) -> Iterator[Finding]:
    for site in ctx.templates:
        owner = site.owner
        if owner is None or owner.scope:
            continue
        if owner.uses in ("parallel", "map") and \
                site.pointer == f"{owner.pointer}/with/itemKey":
            continue
        for ref in site.references():
            if ref.root == "item":
                yield ctx.site_finding(site, ref.start, ref.end,
                                       "item is only defined inside a parallel body (and a "
                                       "parallel's or map's itemKey)")
