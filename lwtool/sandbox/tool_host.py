"""One call of a Python tool inside a confined sandbox (lwtool.sandbox.confined_tools):
`python -m lwtool.sandbox.tool_host` reads `{spec, name, args, runId, stepPath,
granted}` from stdin, loads the tools (`MODULE:ATTR` or `FILE.py:ATTR`, as `--tools`
does), calls the one named (with a ToolContext when it takes one) and writes `{ok:
true, result}` or `{ok: false, error}` on stdout as its last line."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any


def main() -> None:
    request = json.loads(sys.stdin.read())
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # the tool's prints: its log, never the answer's line
    try:
        answer: dict[str, Any] = {"ok": True, "result": _call(request)}
    except BaseException as exc:  # noqa: BLE001 - the tool's failure, told to the host
        answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    real_stdout.write("\n" + json.dumps(answer, default=str) + "\n")
    real_stdout.flush()


def _call(request: dict[str, Any]) -> Any:
    from concurrent.futures import ThreadPoolExecutor

    from lwtool.tools import ToolContext, load_tools

    tool = load_tools(request["spec"]).get(request["name"])
    if tool is None:
        raise LookupError(f"no tool {request['name']!r} in {request['spec']}")
    context = ToolContext(request.get("runId", ""), request.get("stepPath", ""),
                          request.get("granted") or {})
    with ThreadPoolExecutor(1) as threads:
        return asyncio.run(tool.invoke(request.get("args"), threads, context=context))


if __name__ == "__main__":
    main()
