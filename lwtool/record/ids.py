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
