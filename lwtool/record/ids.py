"""Ids and content hashes every part of a run shares: run ids, and the short hashes of
event payloads (inputHash, outputHash, manifestHash)."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from typing import Any

# json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str),
# built once: the bytes earlier logs' hashes were taken over.
_hash_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                default=str).encode


def new_run_id() -> str:
    """Time-ordered and unique: `run_<ms since epoch, hex><random>`."""
    return f"run_{int(time.time() * 1000):011x}{secrets.token_hex(5)}"


def hash_bytes(value: Any) -> bytes:
    """The bytes `short_hash` hashes."""
    return _hash_encode(value).encode("utf-8")


def short_hash(value: Any) -> str:
    """A content hash for event payloads (inputHash, outputHash, manifestHash).

    Deterministic (sorted keys, fixed separators) and C-fast; identity hashes (the
    WorkflowVersion id) use RFC 8785 instead, in lwtool.canonical.
    """
    return "sha256:" + hashlib.sha256(hash_bytes(value)).hexdigest()


RESERVED = "$lwtool"  # where a typed workflow tool's call logs the ids it reserved


def reserved_ids(args: Any) -> dict[str, str]:
    """The run ids a tool call reserved in its logged arguments (`subRunId`,
    `plannerRunId`): at the top for the orchestrator's tools, under RESERVED for a
    workflow offered as a tool of its own."""
    if not isinstance(args, dict):
        return {}
    nested = args.get(RESERVED)
    found = {**args, **nested} if isinstance(nested, dict) else args
    return {key: found[key] for key in ("subRunId", "plannerRunId")
            if isinstance(found.get(key), str)}
