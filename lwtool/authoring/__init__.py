"""Author LWIR workflows and WorkflowDefinitions in Python; `lwtool generate` writes
them as the same files the CLI reads (see lwtool.authoring.builders)."""

from lwtool.authoring.builders import (
    Step,
    Workflow,
    array_output,
    chain_workflows,
    choice,
    object_output,
    text,
    workflow,
)
from lwtool.authoring.definitions import (
    Definition,
    define_workflow,
    memory,
    model_slot,
    planner,
    skill,
    worker,
)
from lwtool.authoring.schemas import to_schema

__all__ = ["Definition", "Step", "Workflow", "array_output", "chain_workflows", "choice",
           "define_workflow",
           "memory", "model_slot", "object_output", "planner", "skill", "text", "to_schema",
           "worker", "workflow"]
