"""Explanations of the codes found outside the rule modules (while loading a file, by
`lwtool check`, or by a planner's grant): what each flags, why, and what to do. The
rule modules carry theirs in their docstrings; these are kept here so `lwtool explain`,
SARIF help and docs/rules.md say as much of every code."""

from __future__ import annotations

OTHER_HELP: dict[str, str] = {
    "parse.invalid": """## What it flags
A file that cannot be read as YAML or JSON: a syntax error (at its line and column), an
empty or binary file, text that is not UTF-8, or `{{ ... }}` left unquoted in YAML (read
as nested mappings).

## Why
Nothing else can be checked until the file parses.

## Instead
Fix the syntax at the position given; quote expressions: `prompt: "{{ input.text }}"`.""",
    "parse.duplicate_key": """## What it flags
A mapping that has the same key twice.

## Why
YAML and JSON parsers keep one of the two silently; which one differs between tools, so
the workflow would not mean one thing.

## Instead
Keep one of the keys (merge what both said).""",
    "parse.unsafe_tag": """## What it flags
A YAML tag outside the core schema, such as `!!python/object`.

## Why
Such tags construct objects when other tools load the file; LWIR holds plain data only.

## Instead
Write the value as plain YAML (a string, number, list or mapping).""",
    "parse.too_large": """## What it flags
A file over the size, nesting depth or alias expansion lwtool reads.

## Why
The limits keep a hostile or runaway file (a "billion laughs" alias bomb) from
exhausting memory in the editor, in CI or in the runtime.

## Instead
Split the workflow, move large data into inputs or artifacts, and avoid deep aliases.""",
    "lwir.unknown_kind": """## What it flags
A file whose `kind` is not `Workflow`, `WorkflowDefinition` or `Pipeline` (or that has
none).

## Why
The kind decides which schema and rules apply.

## Instead
Set `kind: Workflow` (LWIR), `kind: WorkflowDefinition` or `kind: Pipeline`; lock files
(`*.lock.json`) are read as locks.""",
    "lock.stale": """## What it flags
A committed file whose canonical hash no longer matches the lock beside it.

## Why
The lock pins the WorkflowVersion id that reviews, runs and CI agreed on; a change
without a new lock would run a version nobody locked.

## Instead
Review the change, then `lwtool lock FILE` and commit the new lock with it.""",
    "lock.missing": """## What it flags
An LWIR, definition or pipeline file with no lock beside it (a warning).

## Why
Without a lock, CI cannot tell a reviewed version from a changed one.

## Instead
`lwtool lock FILE` and commit `FILE`'s `.lock.json` beside it.""",
    "lock.invalid": """## What it flags
A lock file that is not an lwtool lock (not JSON, another `kind`, missing fields).

## Why
A damaged lock cannot vouch for anything.

## Instead
Delete it and write it again with `lwtool lock FILE`.""",
    "generate.stale": """## What it flags
A generated file (its lock names the generator) that differs from what the generator
gives now.

## Why
The Python generator is the source; the committed file must be what it produces.

## Instead
`lwtool generate MODULE:ATTR -o FILE` and commit the file with its lock.""",
    "portable.extension": """## What it flags
With `lwtool validate --portable` (or the language server's `portable` option): each
use of an lwtool extension, where a file leaves the Little Workflow spec's portable
subset: a `human.input` step, a step's `timeoutMs` or `retry`, code.run sandbox limits
beyond network, env and fs, expression functions beyond `sha256` and `coalesce`, a
definition's `runtime` or `planner.maxCodeSandbox`, a pipeline's
`orchestrator.maxSubRuns`. A warning: lwtool runs the file as it is.

## Why
Another runtime of the spec would reject the file or ignore what it asks for.

## Instead
What each message says the spec offers (e.g. the run's timeout for a step's
`timeoutMs`, a code.run step or a tool for `upper(...)`), or keep the extension and
run the file with lwtool.""",
    "tools.unavailable": """## What it flags
With `lwtool validate --tools FILE|MODULE:ATTR`: a tool a workflow's `permissions.tools`
(or a definition's `tools`) declares that the given tools do not provide: an MCP server
that does not list it (`SERVER.TOOL`), or a module that does not register it.

## Why
A run is refused before it starts when a declared tool is missing; checking the file
against the servers it will meet finds a renamed or removed tool at review time.

## Instead
Name the tool as its server lists it (the message says what it lists), or give the
`--tools` that provides it.""",
    "tools.network_unenforced": """## What it flags
With `lwtool validate --tools`: a tool.call step of a workflow that lists hosts in
`permissions.network`, calling a tool lwtool cannot hold to that list: a Python tool
(it runs inside lwtool's process) or a stdio MCP server's tool (the server is its own
process). A warning.

## Why
The list is enforced where lwtool controls the connection: code.run (Deno's
permissions) and HTTP MCP servers (lwtool connects to their URL). A Python tool or a
stdio server can connect anywhere the machine can; a reviewer should know that the
list does not bind it.

## Instead
Use tools you trust with the network, serve the tool over HTTP MCP from a host you
control, or move the connection into a code.run step.""",
    "grant.tool": """## What it flags
A planner's draft that lists a tool in `permissions.tools` that its definition does not
declare.

## Why
A draft never gets more than its definition grants.

## Instead
The planner revises the draft; declare the tool in the definition's `tools` if the
workflow should have it.""",
    "grant.model": """## What it flags
A planner's draft that lists a model slot its definition's `models` do not have.

## Why
A draft never gets more than its definition grants.

## Instead
The planner revises the draft; add the slot to the definition's `models` if it should
be used.""",
    "grant.secret": """## What it flags
A planner's draft that lists a secret in `permissions.secrets` that its definition's
`secrets` do not declare.

## Why
A draft never gets more than its definition grants: a model that plans cannot give a
step a credential the developer did not hand to the workflow.

## Instead
The planner revises the draft; declare the secret in the definition's `secrets` if the
workflow should have it.""",
    "grant.network": """## What it flags
A planner's draft whose `permissions.network` lists a host pattern that none of its
definition's `network` patterns covers.

## Why
A draft never gets more than its definition grants.

## Instead
The planner revises the draft; add the host (or a `*.domain` pattern) to the
definition's `network` if the workflow should reach it.""",
    "grant.sandbox": """## What it flags
A planner's draft whose code.run sandbox asks for more (network, env, file system, time,
memory) than the definition's `planner.maxCodeSandbox`.

## Why
A draft never gets more than its definition grants.

## Instead
The planner revises the draft; widen `planner.maxCodeSandbox` if the code needs it.""",
}
