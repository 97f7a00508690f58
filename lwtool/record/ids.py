"""Ids and content hashes every part of a run shares: run ids, and the short hashes of
event payloads (inputHash, outputHash, manifestHash)."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from typing import Any

from lwtool.canonical.exact_json import EXACT, refuse

try:
    import orjson
except ImportError:  # a base install (validate, check, lsp): the standard library alone
    orjson = None  # type: ignore[assignment]

# json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str),
# built once: the bytes earlier logs' hashes were taken over (and still are).
_hash_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                                default=str).encode
# orjson writes the same bytes ten times faster, with sorted keys, for JSON values, except
# floats the standard library writes in exponent form with a padded exponent (`1e-05`,
# `2.5e-07`): orjson writes `0.00001`, `2.5e-7`, and its text for every such float has
# one of the forms below. Text with any of them (a string holding `e-5` too) is written
# again by the standard library; so is anything orjson refuses (an integer beyond 64
# bits, a non-string key, a lone surrogate, a date or dataclass the standard library
# writes as its str()). lwtool hashes JSON values; an enum member, which orjson writes as
# its value, is not one.
_FAST = 0 if orjson is None else orjson.OPT_SORT_KEYS | EXACT
_MAYBE_OTHER_FLOAT = re.compile(rb"e-[1-9](?![0-9])|0\.0000")


def new_run_id() -> str:
    """Time-ordered and unique: `run_<ms since epoch, hex><random>`."""
    return f"run_{int(time.time() * 1000):011x}{secrets.token_hex(5)}"


def hash_bytes(value: Any) -> bytes:
    """The bytes `short_hash` hashes: the standard library's sorted compact JSON,
    written by orjson wherever its bytes are the same."""
    if orjson is not None:
        try:
            data: bytes = orjson.dumps(value, default=refuse, option=_FAST)
        except TypeError:
            pass
        else:
            # A substring test first: the regex alone walks every byte (~10 ns each).
            # `find`, not `in`: bytes' `in` first tries its operand as an integer and
            # formats a TypeError it then drops (~2k instructions a test).
            if (data.find(b"e-") < 0 and data.find(b"0.0000") < 0) \
                    or _MAYBE_OTHER_FLOAT.search(data) is None:
                return data
    return _hash_encode(value).encode("utf-8")


def short_hash(value: Any) -> str:
    """A content hash for event payloads (inputHash, outputHash, manifestHash).

    Deterministic (sorted keys, fixed separators) and C-fast; identity hashes (the
    WorkflowVersion id) use RFC 8785 instead, in lwtool.canonical.
    """
    return "sha256:" + hashlib.sha256(hash_bytes(value)).hexdigest()


RESERVED = "$lwtool"  # where a tool call logs the run ids lwtool reserved for it
# Before reservations moved under RESERVED, the orchestrator's own tools logged them at
# the top of their arguments; such logs are read there too (the ids still checked).
_TOP_LEVEL_BEFORE = frozenset({"plan_workflow", "run_workflow", "start_workflow"})


PLANNER, SUB_RUN = "plannerRunId", "subRunId"


def reservation(run_id: str, call_id: str, *kinds: str) -> dict[str, str]:
    """The ids (`kinds` of PLANNER, SUB_RUN) lwtool reserves for the tool call `call_id`
    of run `run_id`, and the call id: derived from the call id (`<step>#<turn>.<n>`), so
    a call re-dispatched after a kill reserves the same ones, and a reader can tell
    lwtool's ids from anything else in the arguments."""
    suffix = call_id.rpartition("#")[2]
    derived = {PLANNER: f"{run_id}.plan.{suffix}", SUB_RUN: f"{run_id}.sub.{suffix}"}
    return {**{kind: derived[kind] for kind in kinds}, "callId": call_id}


def without_reserved(args: Any) -> Any:
    """`args` as a model or code wrote them, less RESERVED: lwtool's key is lwtool's
    alone, whoever writes the arguments."""
    if isinstance(args, dict) and RESERVED in args:
        return {key: value for key, value in args.items() if key != RESERVED}
    return args


def reserved_ids(run_id: str, started: Any) -> dict[str, str]:
    """The run ids (`subRunId`, `plannerRunId`) that the tool call of run `run_id` whose
    `harness.tool_call.started` payload is `started` reserved. An id counts only where
    it is the one lwtool derives for that call: whatever else the arguments carry (a
    model writes them) names no run of lwtool's."""
    if not isinstance(started, dict) or not isinstance(started.get("callId"), str):
        return {}
    args = started.get("args")
    if not isinstance(args, dict):
        return {}
    logged = args.get(RESERVED)
    if not isinstance(logged, dict):
        logged = args if started.get("toolName") in _TOP_LEVEL_BEFORE else {}
    derived = reservation(run_id, started["callId"], SUB_RUN, PLANNER)
    return {key: derived[key] for key in (SUB_RUN, PLANNER) if logged.get(key) == derived[key]}


def child_run_id(run_id: str, step_path: str) -> str:
    """The run a `workflow.invoke` step at `step_path` (visit and branch included) of
    run `run_id` starts: a pure function of the two, never random, so a replay after a
    kill at any point finds the child it started. Readable (the parent's id, the step's
    path) and at most 118 characters (run ids hold at most 128)."""
    digest = hashlib.sha256(f"{run_id}\n{step_path}".encode()).hexdigest()[:12]
    step = re.sub(r"[^A-Za-z0-9_-]+", "-", step_path).strip("-")[:40]
    return f"{run_id[:64]}.{step}.{digest}"
