"""Tools of examples/map: read a JSON-lines file of tickets, score one ticket (a ticket
whose text says "crash" cannot be scored), merge scored batches into a summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_jsonl(args: Any) -> list[Any]:
    """The tickets of a JSON-lines file (relative to the working folder)."""
    with Path(args["file"]).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def score_ticket(ticket: Any) -> Any:
    text = str(ticket.get("text", ""))
    if "crash" in text:
        raise ValueError(f"ticket {ticket['id']}: cannot score a crash report")
    urgent = sum(text.count(word) for word in ("down", "urgent", "refund"))
    return {"id": ticket["id"], "score": min(10, 1 + 3 * urgent)}


def merge_scores(args: Any) -> Any:
    """Scored batches (arrays) or summaries, merged: count, total and the top ticket."""
    count, total, top = 0, 0, {"id": None, "score": -1}
    for part in args["items"]:
        if isinstance(part, list):  # a shard's output: scored tickets
            part = {"count": len(part), "total": sum(t["score"] for t in part),
                    "top": max(part, key=lambda t: t["score"], default=top)}
        count, total = count + part["count"], total + part["total"]
        if part["top"]["score"] > top["score"]:
            top = part["top"]
    return {"count": count, "total": total, "top": top}


tools = {"read_jsonl": read_jsonl, "score_ticket": score_ticket,
         "merge_scores": merge_scores}
