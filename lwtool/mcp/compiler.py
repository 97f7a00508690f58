"""What `lwtool mcp` serves, as plain functions (each returns JSON data, or raises
ToolError with a message for the agent): the compiler's answers on a file or on text
(`validate`, `graph`, `hash`, `canon`, `explain`), computed in this process exactly as
the CLI computes them; and the answers that read a world or call a planner (`runs`,
`events`, `plan`), which run the CLI itself (`python -m lwtool ... --json`) with the
server's --data-dir/--world/--models/--tools, so they say exactly what the commands say
and a failing one never takes the server down.

What an agent names is confined (a repository's text may steer the agent): every path
it gives resolves (symlinks followed) inside the server's folder (`--root`); `plan`
writes only an LWIR file name (`*.lwir.yaml`, `*.lwir.json`), and never over a file
that is not an LWIR workflow; a run id is checked as a run id and passed after `--`;
and `plan` imports no Python the definition names (`planner.harness`) unless the
server was started with `--allow-code`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_NAME = "workflow.lwir.yaml"  # what text without a `name` is read as
EVENTS_LIMIT = 500  # events a call returns at most (the rest: `afterSeq`)
PLAN_TIMEOUT = 600.0  # seconds `plan` may take


class ToolError(Exception):
    """An answer the agent gets as an error result (its message only)."""


@dataclass(frozen=True)
class Served:
    """The server's own options: where its relative paths start, the world its `runs`
    and `events` read, the models and tools its `plan` uses."""

    root: Path = field(default_factory=Path.cwd)
    data_dir: str = ".little-workflow"
    world: str | None = None
    models: str | None = None
    tools: tuple[str, ...] = ()
    allow_code: bool = False  # `plan` may import a definition's planner.harness


def validate(served: Served, path: str | None, text: str | None,
             name: str | None) -> dict[str, Any]:
    """Findings of files (a file or a folder, as `lwtool validate` reads them) or of
    text: {valid, files: [{path, kind, valid, findings: [{code, severity, message,
    pointer, line, column, endLine, endColumn}]}]}."""
    from lwtool.compile import compile_file, compile_text
    from lwtool.lock.paths import discover

    if text is not None:
        if path is not None:
            raise ToolError("give `path` or `text`, not both")
        compiled = [compile_text(text, name or DEFAULT_NAME)]
    else:
        if path is None:
            raise ToolError("give `path` (a file or folder) or `text` (a file's text)")
        try:
            files = discover([_resolved(served, path)])
        except FileNotFoundError:
            raise ToolError(f"no such file or folder: {path}") from None
        if not files:
            raise ToolError(f"no workflow files in {path} (*.lwir.yaml, *.workflow.yaml, "
                            "*.definition.yaml, *.pipeline.yaml)")
        compiled = [_compiled_file(compile_file, f) for f in files
                    if not f.name.lower().endswith(".lock.json")]
    reports = [{"path": _shown(served, c.path), "kind": c.kind,
                "valid": c.ok, "findings": [f.as_json() for f in c.findings]}
               for c in compiled]
    return {"valid": all(r["valid"] for r in reports), "files": reports}


def explain(code: str) -> dict[str, Any]:
    """A finding code's summary and explanation (What it flags / Why / Example /
    Instead)."""
    import difflib

    from lwtool.validate.registry import rule_help

    helped = rule_help()
    found = helped.get(code.strip())
    if found is None:
        near = difflib.get_close_matches(code.strip(), list(helped), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise ToolError(f"no finding has the code '{code}'{hint}")
    summary, body = found
    return {"code": code.strip(), "summary": summary, "explanation": body}


def graph(served: Served, path: str | None, text: str | None, name: str | None,
          fmt: str) -> dict[str, Any]:
    """The workflow's graph as Mermaid (or Graphviz dot) text."""
    from lwtool import graph as workflow_graph
    from lwtool.validate.context import Context

    if fmt not in ("mermaid", "dot"):
        raise ToolError(f"format is mermaid or dot, not {fmt!r}")
    compiled = _valid(served, path, text, name, "nothing to draw")
    if compiled.kind != "Workflow":
        raise ToolError(f"{compiled.path} is a {compiled.kind}; graph draws an LWIR workflow")
    built = workflow_graph.build(Context(compiled.document, "Workflow"))
    render = workflow_graph.mermaid if fmt == "mermaid" else workflow_graph.dot
    return {"format": fmt, "graph": render(built)}


def digest(served: Served, path: str | None, text: str | None,
           name: str | None) -> dict[str, Any]:
    """The WorkflowVersion id of LWIR (a definition's WorkflowDefinitionHash)."""
    compiled = _valid(served, path, text, name, "nothing to hash")
    key = "workflowVersionId" if compiled.kind == "Workflow" else "hash"
    return {"kind": compiled.kind, key: compiled.digest()}


def canon(served: Served, path: str | None, text: str | None,
          name: str | None) -> dict[str, Any]:
    """The RFC 8785 canonical JSON of a valid file, as text."""
    compiled = _valid(served, path, text, name, "nothing to canonicalize")
    return {"kind": compiled.kind, "canonical": compiled.canonical().decode()}


def runs(served: Served, status: list[str] | None, limit: int | None,
         queue: str | None) -> dict[str, Any]:
    """`lwtool runs --json` of the server's world."""
    args = ["runs", "--json", *_where(served)]
    for one in status or []:
        args += ["--status", one]
    if limit is not None:
        args += ["--limit", str(limit)]
    if queue is not None:
        args += ["--queue", queue]
    return {"runs": json.loads(_lwtool(served, args) or "[]")}


def events(served: Served, run_id: str, event_type: str | None,
           after_seq: int) -> dict[str, Any]:
    """`lwtool events RUN --json` of the server's world: at most EVENTS_LIMIT events
    after `after_seq`, and `nextSeq` when there are more."""
    from lwtool.world.base import check_run_id

    try:
        check_run_id(run_id)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    args = ["events", "--json", *_where(served)]
    if event_type is not None:
        args += ["--type", event_type]
    args += ["--", run_id]  # never an option, whatever it holds
    found = [json.loads(line) for line in _lwtool(served, args).splitlines() if line]
    after = [e for e in found if e["seq"] > after_seq]
    page = after[:EVENTS_LIMIT]
    more = {"nextSeq": page[-1]["seq"]} if len(after) > EVENTS_LIMIT else {}
    return {"runId": run_id, "events": page, **more}


def plan(served: Served, path: str, run_input: Any, offline: bool,
         out: str | None) -> dict[str, Any]:
    """`lwtool plan DEFINITION`: the planner drafts LWIR, the validator repairs or
    rejects it, and the locked LWIR is written (to `out`, else a temporary file) and
    returned as text with its WorkflowVersion id."""
    definition = _resolved(served, path)
    with tempfile.TemporaryDirectory(prefix="lwtool-mcp-plan-") as scratch:
        target = _writable_lwir(served, out) if out else Path(scratch) / "planned.lwir.yaml"
        (Path(scratch) / "input.json").write_text(json.dumps(run_input))
        args = ["plan", "-i", str(Path(scratch) / "input.json"),
                "-o", str(target), "--json", *_where(served)]
        args += ["--offline"] if offline else []
        args += [] if served.allow_code else ["--no-code"]
        args += ["--models", str(served.root / served.models)] if served.models else []
        for tools in served.tools:
            args += ["--tools", tools]
        args += ["--", str(definition)]
        result = json.loads(_lwtool(served, args, timeout=PLAN_TIMEOUT))
        lwir = target.read_text(encoding="utf-8")
    return {"lwir": lwir, "path": _shown(served, str(target)) if out else None,
            "workflowVersionId": result.get("workflowVersionId"),
            "plannerRunId": result.get("plannerRunId"), "drafts": result.get("drafts"),
            "usage": result.get("usage")}


def _valid(served: Served, path: str | None, text: str | None, name: str | None,
           doing: str) -> Any:
    """The compiled file or text; ToolError listing its errors when it is not valid."""
    from lwtool.compile import compile_file, compile_text

    if (path is None) == (text is None):
        raise ToolError("give `path` (a file) or `text` (a file's text), one of them")
    compiled = compile_text(text, name or DEFAULT_NAME) if text is not None else \
        _compiled_file(compile_file, _resolved(served, path or ""))
    if not compiled.ok:
        shown = _shown(served, compiled.path)
        errors = [f"{shown}:{f.line}:{f.column}: {f.code} {f.message}"
                  for f in compiled.findings if f.severity.value == "error"]
        raise ToolError(f"{shown} is not valid; {doing}: "
                        + "; ".join(errors[:5]) + (" ..." if len(errors) > 5 else ""))
    return compiled


def _compiled_file(compile_file: Any, path: Path) -> Any:
    try:
        return compile_file(path)
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None


LWIR_NAMES = (".lwir.yaml", ".lwir.yml", ".lwir.json")


def _resolved(served: Served, path: str) -> Path:
    """`path` (relative to the server's folder) resolved; ToolError when it leads
    outside that folder, through `..`, an absolute path or a symlink."""
    root = served.root.resolve()
    try:
        found = (root / Path(path).expanduser()).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise ToolError(f"cannot resolve {path}: {exc}") from None
    if not found.is_relative_to(root):
        raise ToolError(f"{path} is outside the folder this server serves ({root}); "
                        "paths are relative to it and stay inside it")
    return found


def _writable_lwir(served: Served, out: str) -> Path:
    """Where `plan` may write: an LWIR file name inside the served folder, new or an
    LWIR workflow already (its lock, beside it, is lwtool's own)."""
    from lwtool.compile import compile_file

    target = _resolved(served, out)
    if not target.name.lower().endswith(LWIR_NAMES):
        raise ToolError(f"plan writes LWIR files only: name `out` *.lwir.yaml or "
                        f"*.lwir.json, not {out}")
    if target.exists() and not target.is_file():
        raise ToolError(f"{out} exists and is not a file; nothing was written")
    if target.exists() and _compiled_file(compile_file, target).kind != "Workflow":
        raise ToolError(f"{out} exists and is not an LWIR workflow; plan overwrites only "
                        "LWIR it wrote (nothing was written)")
    return target


def _shown(served: Served, path: str) -> str:
    """A path as the agent named it: relative to the server's folder where inside it."""
    for root in (served.root, served.root.resolve()):
        try:
            return str(Path(path).relative_to(root))
        except ValueError:
            continue
    return path


def _where(served: Served) -> list[str]:
    data_dir = Path(served.data_dir).expanduser()  # the operator's, not the agent's
    return ["--data-dir", str(data_dir if data_dir.is_absolute() else served.root / data_dir),
            *(["--world", served.world] if served.world else [])]


def _lwtool(served: Served, args: list[str], timeout: float = 60.0) -> str:
    """The command's stdout; ToolError with its last stderr line when it fails."""
    env = {key: value for key, value in os.environ.items() if key != "LWTOOL_WORLD"}
    try:
        done = subprocess.run([sys.executable, "-m", "lwtool", *args], cwd=served.root,
                              capture_output=True, text=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ToolError(f"lwtool {args[0]} did not finish within {timeout:g} s") from None
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        raise ToolError(said[-1].removeprefix("lwtool: ") if said else
                        f"lwtool {args[0]} exited with {done.returncode}")
    return done.stdout
