"""What a session manifest pins of a tool: a digest of its name, description, schemas
and code that is the same in every process."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import types

from lwtool.calls.agent_loop import tool_schema
from lwtool.tools import Tool


def tool_fingerprint(tool: Tool) -> str:
    """What a manifest pins of a tool: its name, description, schemas and code (a
    declared `__lwtool_version__` on the callable stands for its code when given)."""
    fn = tool.fn
    code = getattr(fn, "__lwtool_version__", None)
    if code is None:
        bound = ""
        while isinstance(fn, functools.partial):  # the function, and what is bound to it
            bound += repr((fn.args, sorted(fn.keywords.items())))
            fn = fn.func
        body = getattr(fn, "__code__", None) or getattr(type(fn).__call__, "__code__", None)
        code = (code_digest(body) if body is not None else _ADDRESS.sub("", repr(fn))) + \
            _ADDRESS.sub("", bound)
    material = json.dumps([tool.name, tool.description, tool_schema(tool),
                           tool.output_schema if isinstance(tool.output_schema, dict) else None,
                           str(code)], sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(material.encode()).hexdigest()


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # differs in every process


def code_digest(code: types.CodeType) -> str:
    """A digest of a code object that is the same in every process: nested code objects
    (inner functions, comprehensions) are digested in turn, never shown by address."""
    consts = [code_digest(c) if isinstance(c, types.CodeType) else repr(c)
              for c in code.co_consts]
    material = repr((code.co_code, consts, code.co_names))
    return hashlib.sha256(material.encode()).hexdigest()
