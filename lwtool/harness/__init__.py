"""The roles, each a harness session (the spec's contract `run(task, ctx)`): the workflow
harness that executes worker steps, the agent loop, sessions that are runs of their
own and the workspaces they see (memory stores, scratch, skills, the bash tool), the
worker's prompt and identity, the fixer. Below the scheduler (lwtool.runtime), above
the step executors (lwtool.steps)."""
