"""code.run in a Deno sandbox: the step's pinned TypeScript/JavaScript, loaded as
`data:` modules through an import map, run by a bootstrap that calls the entrypoint's
`run({ input, tools })`, with Deno permissions from the step's `sandbox` policy and
limits on time, memory and output.

- source.py: pins checked, files as module URLs, the import map (file and remote
  imports refused)
- policy.py: `sandbox` + limits -> Deno flags, rlimits, environment
- deno.py: finding the Deno binary (the `deno` PyPI package ships it)
- runner.py: one execution: the process, its frames, tool calls, reaping (its walls
  come from lwtool.sandbox: bubblewrap, parent-death, pid namespace)
- check.py: `deno check` of code.run sources (`lwtool validate --check-code`)

`onFailure.fixer`, the fix_step session that heals a failed attempt, is a role:
lwtool.harness.fixer.
"""
