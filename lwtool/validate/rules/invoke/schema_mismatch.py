"""What a workflow.invoke gives or expects does not fit its child's schemas.

## What it flags
A `workflow.invoke` whose `with.input` has literal parts the child's input schema
refuses (a required property missing, a property the child does not take, a value of
the wrong type; `{{ }}` parts are checked when the run gets there), or whose declared
`output` schema may refuse what the child's output schema lets it return (a required
property the child does not promise, another type).

## Why
The child checks its input when it starts and its output when it ends; a mismatch
known from the files should not wait for a run to fail.

## Example
```yaml
permissions: {tools: [improve, checkText, publish], models: []}
steps:
  - id: polish
    uses: workflow.invoke
    with:
      workflow: ./examples/refine-loop.lwir.yaml
      input: {words: "{{ input.text }}"}
    output:
      mode: object
      schema: {type: object, required: [text, score], properties: {text: {type: string}}}
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
    output:
      mode: object
      schema: {type: object, required: [text], properties: {text: {type: string}}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.children import invoked_children
from lwtool.validate.context import Context
from lwtool.validate.invokes import INVOKE, steps_of
from lwtool.validate.schema_fit import literal_problems, output_problems

CODE = "invoke.schema_mismatch"


def check(ctx: Context) -> Iterator[Finding]:
    steps = dict(steps_of(ctx.value))
    for pointer, settings, child, _ in invoked_children(ctx):
        step = steps.get(pointer.removesuffix("/with"))
        if step is None or step.get("uses") != INVOKE:  # a map's: its own rules
            continue
        at_step = pointer.removesuffix("/with")
        if "input" in settings:
            schema = (child.get("input") or {}).get("schema")
            for at, message in literal_problems(settings["input"], schema):
                yield ctx.finding(f"{at_step}/with/input{at}", message)
        mode = step.get("output")
        declared = mode.get("schema") if isinstance(mode, dict) else None
        for message in output_problems(declared, (child.get("output") or {}).get("schema")):
            yield ctx.finding(f"{at_step}/output/schema", message)
