"""Composing workflows: a pipeline of definitions, the orchestrator session that plans
each once and runs it many times as sub-runs (plan_workflow, run_workflow,
start_workflow), and the CLI/Python surfaces over them. Above the planner (it plans)
and the runtime (it runs)."""
