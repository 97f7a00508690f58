"""Tools for the examples (run them with --tools examples/tools.py:tools)."""

from __future__ import annotations

from typing import Any

from lwtool import ToolRegistry

tools = ToolRegistry()


@tools.tool(description="Make a text a little better (here: add emphasis).")
def improve(args: dict[str, Any]) -> dict[str, Any]:
    return {"text": args["text"].rstrip(".") + "!"}


@tools.tool(name="checkText", description="Accept a text once it has enough emphasis.")
def check_text(args: dict[str, Any]) -> dict[str, Any]:
    return {"ok": args["text"].count("!") >= 3, "text": args["text"]}


@tools.tool(description="Publish a text; returns what was published.")
def publish(args: dict[str, Any]) -> dict[str, Any]:
    return {"text": args["text"], "rounds": args["rounds"]}


@tools.tool(name="fetchCandidates", description="Candidates for a job, with scores.")
def fetch_candidates(args: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": f"{args['jobId']}-{i}", "score": i / 4} for i in range(5)]


NOTES = {
    "note-1": "Durable runs: every step's result is committed before the next step starts.",
    "note-2": "Replay: a killed run resumes from its log; completed calls are not sent again.",
    "note-3": "Budgets: --max-tokens stops the next model call once the tokens are spent.",
}


@tools.tool(name="searchNotes", description="Search the team's notes; returns the notes "
            "that share a word with the query, by id.",
            input_schema={"type": "object", "required": ["query"],
                          "properties": {"query": {"type": "string"}}})
def search_notes(args: dict[str, Any]) -> list[dict[str, str]]:
    words = {w.strip(".,:;?!").lower() for w in str(args["query"]).split() if len(w) > 3}
    return [{"id": key, "text": text} for key, text in NOTES.items()
            if words & {w.strip(".,:;?!").lower() for w in text.split()}]
