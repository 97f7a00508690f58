"""code.run in a Deno sandbox: the step's pinned TypeScript/JavaScript, loaded as
`data:` modules through an import map, run by a bootstrap that calls the entrypoint's
`run({ input, tools })`, with Deno permissions from the step's `sandbox` policy and
limits on time, memory and output.

- source.py: pins checked, files as module URLs, the import map (file and remote
  imports refused)
- policy.py: `sandbox` + limits -> Deno flags, rlimits, environment
- deno.py: finding the Deno binary (the `deno` PyPI package ships it)
- sandbox.py: one execution: the process, its frames, tool calls, reaping
- check.py: `deno check` of code.run sources (`lwtool validate --check-code`)
- fixer.py: `onFailure.fixer`, a fix_step harness session that heals a failed attempt
"""
