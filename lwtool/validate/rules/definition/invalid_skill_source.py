"""A definition lists a skill source that is malformed or unsafe.

## What it flags
An entry of `planner.skills` or `worker.skills` that is empty, or a `git+` source that
is not `git+<scheme>://<repository>[@<ref>][#subdirectory=<path>]` with a scheme of
https, http, ssh, git or file, or one with a part starting with `-` or holding
whitespace or control characters.

## Why
A Git source's parts become arguments of `git` when lwtool resolves the skill: a part
starting with `-` would be read as an option (`--upload-pack=...` runs a command). lwtool
refuses such a source when a session starts; this finding says so before anything runs.

## Example
```yaml
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: review
planner:
  model: planner
  skills: ["git+--upload-pack=touch /tmp/x;://x@."]
```

## Instead
```yaml
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: review
planner:
  model: planner
  skills: ["git+https://example.com/org/skills.git@v1#subdirectory=review"]
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.source.skill_source import source_problem
from lwtool.validate.context import Context

CODE = "definition.invalid_skill_source"
APPLIES_TO = ("WorkflowDefinition",)


def check(ctx: Context) -> Iterator[Finding]:
    if not isinstance(ctx.value, dict):
        return
    for role in ("planner", "worker"):
        settings = ctx.value.get(role)
        skills = settings.get("skills") if isinstance(settings, dict) else None
        if not isinstance(skills, list):
            continue
        for index, source in enumerate(skills):
            problem = source_problem(source) if isinstance(source, str) else None
            if problem:
                yield ctx.finding(f"/{role}/skills/{index}",
                                  f"skill source {source!r} cannot be used: {problem}")
