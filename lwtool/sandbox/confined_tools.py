"""`--confine-tools` for Python tools: each call runs in a fresh process inside
bubblewrap (lwtool.sandbox.confined) with its own egress proxy, so the hosts it reached
or was refused are its own. The tool keeps its name, schemas and ToolContext (its
step's granted secrets go with the call); a refused connection raises
ConnectionDenied (the step fails with capability_denied), a failure inside is the
tool's failure (ToolFailed). A call costs a process start (~0.1-0.3 s)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from lwtool.capability.hosts import ConnectionDenied, HostPattern
from lwtool.sandbox.confined import confined_argv
from lwtool.sandbox.egress import EgressProxy
from lwtool.tools import NO_CONTEXT, ToolContext, ToolFailed, ToolRegistry


def confine_registry(registry: ToolRegistry, spec: str, patterns: list[HostPattern]
                     ) -> ToolRegistry:
    """`registry` (loaded from `spec`) with each tool called confined."""
    confined = ToolRegistry()
    for name, tool in registry.tools.items():
        confined.register(name, _caller(spec, name, patterns), tool.description,
                          tool.input_schema, tool.output_schema, blocking=True,
                          origin={"confined": True})
    return confined


def _caller(spec: str, name: str, patterns: list[HostPattern]) -> Any:
    def call(args: Any, ctx: ToolContext) -> Any:
        context = ctx or NO_CONTEXT
        request = {"spec": spec, "name": name, "args": args, "runId": context.run_id,
                   "stepPath": context.step_path, "granted": dict(context.granted)}
        proxy = EgressProxy(patterns).start()
        try:
            done = subprocess.run(
                confined_argv([sys.executable, "-m", "lwtool.sandbox.tool_host"],
                              proxy.socket_path),
                input=json.dumps(request), capture_output=True, text=True, check=False)
        finally:
            proxy.close()
        if proxy.denied:
            raise ConnectionDenied(proxy.denied, f"tool '{name}'")
        lines = done.stdout.strip().splitlines()
        try:
            answer = json.loads(lines[-1]) if lines else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            said = done.stderr.strip().splitlines()[-3:]
            raise ToolFailed(f"the confined tool '{name}' ended without an answer (exit "
                             f"{done.returncode}): {' | '.join(said) or 'no output'}")
        if not answer.get("ok"):
            raise ToolFailed(str(answer.get("error")))
        return answer.get("result")

    call.__name__ = name
    return call
