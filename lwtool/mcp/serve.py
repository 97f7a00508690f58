"""`lwtool mcp`: lwtool's compiler as an MCP server on stdio (the SDK's MCPServer),
for coding agents and editors. Its tools (lwtool.mcp.compiler does the work) answer
with structured content; a file or text that is not valid, an unknown code or a run
that does not exist is an error result in the same words as the CLI's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from lwtool._version import __version__
from lwtool.mcp import compiler
from lwtool.mcp.compiler import Served

_F = TypeVar("_F", bound=Callable[..., Any])
INSTRUCTIONS = (
    "lwtool checks and runs LWIR workflows (littleworkflow.dev/v0.1). Call `validate` on a "
    "file or on text you are writing and fix each finding at its line and JSON Pointer; "
    "`explain` says what a finding's code means and what to write instead; `graph` draws "
    "a workflow; `hash` gives its WorkflowVersion id; `plan` drafts LWIR from a "
    "WorkflowDefinition; `runs` and `events` read the runs recorded (read-only).")

Path_ = Annotated[str | None, Field(
    description="A file (or, for validate, a folder), relative to the server's folder.")]
Text = Annotated[str | None, Field(description="The file's text, instead of a path.")]
Name = Annotated[str | None, Field(
    description="The name the text is read as (its extension picks YAML or JSON; "
    "default workflow.lwir.yaml).")]


def build_server(served: Served) -> Any:
    """The MCPServer with lwtool's tools, answering for `served`."""
    server: MCPServer[Any] = MCPServer("lwtool", version=__version__, instructions=INSTRUCTIONS)

    def tool(**kwargs: Any) -> Callable[[_F], _F]:  # all but `plan` change nothing
        hints = ToolAnnotations(read_only_hint=kwargs.pop("read_only", True),
                                open_world_hint=kwargs.pop("open_world", False))
        return server.tool(annotations=hints, **kwargs)

    @tool(description="Validate LWIR, WorkflowDefinition or Pipeline files (a file or "
          "folder) or text: the findings `lwtool validate` prints, with code, severity, "
          "message, JSON Pointer and line/column.")
    def validate(path: Path_ = None, text: Text = None, name: Name = None) -> dict[str, Any]:
        return _answer(compiler.validate, served, path, text, name)

    @tool(description="Explain a finding's code (e.g. step.missing_dependency): what it "
          "flags, why, an example and what to write instead.")
    def explain(code: Annotated[str, Field(description="A finding's code.")]
                ) -> dict[str, Any]:
        return _answer(compiler.explain, code)

    @tool(description="Draw a workflow as a Mermaid flowchart (or Graphviz dot): needs "
          "and decision edges, loops, parallel groups.")
    def graph(path: Path_ = None, text: Text = None, name: Name = None,
              format: Literal["mermaid", "dot"] = "mermaid") -> dict[str, Any]:
        return _answer(compiler.graph, served, path, text, name, format)

    @tool(name="hash", description="The WorkflowVersion id (sha256:...) of a valid LWIR "
          "file or text (a definition's WorkflowDefinitionHash).")
    def hash_(path: Path_ = None, text: Text = None, name: Name = None) -> dict[str, Any]:
        return _answer(compiler.digest, served, path, text, name)

    @tool(description="The RFC 8785 canonical JSON of a valid file or text.")
    def canon(path: Path_ = None, text: Text = None, name: Name = None) -> dict[str, Any]:
        return _answer(compiler.canon, served, path, text, name)

    @tool(description="The runs recorded in the server's world (read-only): id, status, "
          "workflow, version, times, parent, what a waiting run waits for.")
    def runs(status: Annotated[list[str] | None, Field(
                 description="Only runs with these statuses (queued, running, "
                 "interrupted, waiting, completed, failed).")] = None,
             limit: Annotated[int | None, Field(ge=1, description="Only the N newest.")
                              ] = None,
             queue: Annotated[str | None, Field(description="PostgreSQL world: only "
                                                "this queue's runs.")] = None
             ) -> dict[str, Any]:
        return _answer(compiler.runs, served, status, limit, queue)

    @tool(description="A run's events in commit order (read-only), at most "
          f"{compiler.EVENTS_LIMIT} a call: pass `afterSeq` = `nextSeq` for more.")
    def events(runId: Annotated[str, Field(description="The run.")],  # noqa: N803
               type: Annotated[str | None, Field(description="An event type glob, e.g. "
                                                 "'harness.tool_call.*'.")] = None,
               afterSeq: Annotated[int, Field(  # noqa: N803 - the tool's argument names
                   ge=0, description="Only events after this seq.")] = 0) -> dict[str, Any]:
        return _answer(compiler.events, served, runId, type, afterSeq)

    @tool(description="Draft LWIR for a WorkflowDefinition with its planner model (or "
          "offline: lwtool's deterministic model, no key), repaired by the validator and "
          "locked: the LWIR's text and WorkflowVersion id.", read_only=False,
          open_world=True)
    def plan(path: Annotated[str, Field(description="A WorkflowDefinition file.")],
             input: Annotated[dict[str, Any] | None, Field(
                 description="The run input the plan is for: a JSON object that fits the "
                 "definition's input schema.")] = None,
             offline: Annotated[bool, Field(description="Use the offline model for every "
                                            "slot (no network, no key).")] = False,
             out: Annotated[str | None, Field(description="Also write the LWIR (and its "
                                              "lock beside it) here: a *.lwir.yaml or "
                                              "*.lwir.json name inside the server's "
                                              "folder, new or LWIR already.")] = None
             ) -> dict[str, Any]:
        return _answer(compiler.plan, served, path, {} if input is None else input,
                       offline, out)

    return server


def _answer(work: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """The work's answer; its ToolError as the SDK's (an error result, its words)."""
    try:
        return work(*args)
    except compiler.ToolError as exc:
        raise ToolError(str(exc)) from None


def serve(served: Served) -> None:
    """Serve on stdio until the client closes it."""
    import logging

    logging.getLogger("mcp").setLevel(logging.WARNING)
    build_server(served).run()
