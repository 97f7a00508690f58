"""A parallel step's `items` or `itemKey` is not a usable expression.

## What it flags
`items` given as text that is not exactly one `{{ expression }}`; an `itemKey` that is
not exactly one `{{ expression }}` reading `item`.

## Why
Branch step paths carry the item key (`each[cand_123].score`); a key that does not
depend on the item would give every branch the same path.

## Example
```yaml
steps:
  - id: each
    uses: parallel
    with:
      items: "{{ input.rows }}"
      itemKey: "{{ input.batch }}"
      maxBranches: 10
      maxConcurrency: 2
    steps: [{id: work, uses: tool.call, with: {tool: t}}]
```

## Instead
```yaml
steps:
  - id: each
    uses: parallel
    with:
      items: "{{ input.rows }}"
      itemKey: "{{ item.id }}"
      maxBranches: 10
      maxConcurrency: 2
    steps: [{id: work, uses: tool.call, with: {tool: t}}]
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "parallel.invalid_item_key"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        if info.uses != "parallel":
            continue
        items = info.with_.get("items")
        if isinstance(items, str):
            site = ctx.site_at(f"{info.pointer}/with/items")
            if site is None or (site.template is not None and not site.template.is_single):
                yield ctx.finding(f"{info.pointer}/with/items",
                                  "items must be an array or exactly one {{ expression }}")
        key = info.with_.get("itemKey")
        if not isinstance(key, str):
            continue
        site = ctx.site_at(f"{info.pointer}/with/itemKey")
        if site is None or (site.template is not None and not site.template.is_single):
            yield ctx.finding(f"{info.pointer}/with/itemKey",
                              "itemKey must be exactly one {{ expression }}")
        elif site.template is not None and not any(r.root == "item"
                                                   for r in site.references()):
            yield ctx.finding(f"{info.pointer}/with/itemKey",
                              "itemKey must read the item (e.g. {{ item.id }}) so that each "
                              "branch gets its own key")
