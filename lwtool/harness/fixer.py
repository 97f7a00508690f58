"""`onFailure.fixer`: a fix_step harness session that heals a failed code.run attempt.

The fixer (the step's fixer model slot, its `system` first) is given the source, the
input, the output contract and the error. Its tools: `run_code({source})` runs a
candidate entrypoint in the step's own sandbox against the step input and reports the
output or the error; `submit_fix({source})` does the same and, when the output fits the
step's output mode, ends the session: the step's output is that run's, and the source is
logged as `fixedSource` in the fixer's `harness.session.completed` (never written back
to the LWIR). A rejected submission is one of `maxAttempts` (default 3); then the step
fails with the last error. Where a sandbox for bash is available the fixer also has
bash over its mounts: its scratch (holding the original files) and the workflow memory
store, read-write when `memory.workflow` is rw, for a lesson to future planners.

Durable like every session: the fixer's model turns and tool calls are logged under
`<stepPath>#fix`; a candidate's own tool calls (caller `code`) under
`<stepPath>#fix.<source hash>.code.<n>`, so a resumed fixer calls nothing twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from typing import Any

from lwtool.coderun.policy import CodePolicy
from lwtool.harness.contract import FixStepTask, HarnessContext, HarnessResult
from lwtool.harness.manifests import NO_BASH, SessionCapabilities, role_manifest
from lwtool.record.errors import StepFailure
from lwtool.record.ids import short_hash
from lwtool.tools import Tool, ToolRegistry
from lwtool.world.base import NewEvent
from lwtool.world.files import NotARegularFile, write_inside

DEFAULT_MAX_ATTEMPTS = 3
MAX_TURNS = 24
_SOURCE = {"type": "object", "additionalProperties": False, "required": ["source"],
           "properties": {"source": {"type": "string",
                                     "description": "The whole entrypoint source."}}}
FIXER_SYSTEM = """You fix a failed code.run step of an LWIR workflow: TypeScript whose \
entrypoint exports `async function run({ input, tools })` and returns the step output.
Find why it failed, write a corrected entrypoint, and test it:
- run_code({"source": ...}) runs a candidate in the step's sandbox (no network, no files, \
no environment) on the step's input and tells you the output or the error.
- submit_fix({"source": ...}) submits the fix. It is run once more; it is accepted when its \
output fits the step's output contract. Each rejected submission uses one of your attempts.
Keep the step's intent; do not hard-code an output. Reply with the fix through \
submit_fix, not in text."""


async def fix_step(task: FixStepTask, ctx: HarnessContext,
                   code_timeout: float | None = None) -> HarnessResult:
    from lwtool.calls.agent_loop import run_agent
    from lwtool.steps.ai_generate import locked_model
    from lwtool.steps.code_run import files_of

    run, step, path = ctx.recorder, task.step, task.step_path
    settings = step.get("with") or {}
    fixer = (step.get("onFailure") or {}).get("fixer") or {}
    slot = str(fixer.get("model"))
    model = locked_model(run, slot, path, "fixer model slot")
    max_attempts = int(fixer.get("maxAttempts", DEFAULT_MAX_ATTEMPTS))
    files = files_of(settings, path)
    entry = str(settings.get("entrypoint"))
    candidate = _Candidates(run, step, path, files, entry,
                            CodePolicy.of_step(settings, code_timeout), task.step_input)
    if ctx.workspace is not None:  # its peer-steps mount shows the other steps' outputs
        from lwtool.harness.peers import write_peer_outputs

        await write_peer_outputs(run, path)
    tools, bash_hash, store_ids = _tools(candidate, ctx, files)
    system = "\n\n".join(p for p in (str(fixer.get("system") or ""), FIXER_SYSTEM) if p)
    session = f"{path}#fix"
    manifest = role_manifest("fixer", SessionCapabilities(
        run.harness.harness_id, slot, system, short_hash([]), short_hash(tools.names()),
        bash_hash, store_ids), {
        "workflowDefinitionHash": run.workspace.get("definitionHash"),  # None: plain LWIR
        "workflowVersionId": run.version_id, "stepPath": path,
        "stepConfigHash": run.config_hash(step), "fixerMaxAttempts": max_attempts})
    run.journal.check_session(run.run_id, run.version_id, session, manifest)
    run.note([NewEvent("harness.session.started", {
        "runId": run.run_id, "role": "fixer", "parentRunId": run.run_id,
        "task": {"kind": "fix_step", "priorFixAttempts": task.prior_fix_attempts},
        "manifest": manifest, "manifestHash": short_hash(manifest)}, session)])
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": _brief(step, files, entry, task)}]
    judge = _Judge(max_attempts, task.original_attempt_error)
    try:
        result = await run_agent(run, session, model, messages,
                                 tools, max_turns=MAX_TURNS, finish=judge.finish)
        if not result.finished_by_tool:
            raise StepFailure("step_failed", "the fixer ended without an accepted fix ("
                              f"{judge.attempts} attempt(s)); the code's error: "
                              f"{judge.last_error}", path)
    except StepFailure as failure:
        failure.step_path = path
        await run.record([NewEvent("harness.session.failed", {
            "runId": run.run_id, "error": failure.message}, session)])
        raise
    fixed = result.final
    output = {"kind": "fix_step", "fixedSource": fixed["fixedSource"],
              "attempts": judge.attempts + 1}
    done = NewEvent("harness.session.completed", {"runId": run.run_id, "output": output,
                                                  "usage": result.usage}, session)
    return HarnessResult("fix_step", fixed["output"], [done])


class _Judge:
    """Counts submissions as the session's tool results arrive (replayed ones too)."""

    def __init__(self, max_attempts: int, original: dict[str, Any]) -> None:
        self.max_attempts = max_attempts
        self.attempts = 0
        self.last_error = str(original.get("message", ""))

    def finish(self, name: str, value: Any) -> bool:
        if name != "submit_fix" or not isinstance(value, dict):
            return False
        if value.get("accepted"):
            return True
        self.attempts += 1
        self.last_error = str(value.get("error", ""))
        if self.attempts >= self.max_attempts:
            raise StepFailure("step_failed", f"the fixer's {self.attempts} fix(es) all "
                              f"failed; the last: {self.last_error}")
        return False


class _Candidates:
    """Runs candidate sources in the step's sandbox (durably, keyed by their content)."""

    def __init__(self, run: Any, step: dict[str, Any], path: str, files: dict[str, str],
                 entry: str, policy: CodePolicy, step_input: Any) -> None:
        self.run, self.step, self.path, self.files = run, step, path, files
        self.entry, self.policy, self.step_input = entry, policy, step_input

    async def attempt(self, args: Any) -> dict[str, Any]:
        from lwtool.steps.code_run import CodeRunFailed, checked_output, run_sandboxed

        if not isinstance(args, dict) or not isinstance(args.get("source"), str):
            raise ValueError('call with {"source": "<the whole entrypoint source>"}')
        source = args["source"]
        files = {**self.files, self.entry: source}
        label = "fix." + short_hash(files)[7:19]
        outcome = await run_sandboxed(self.run, self.path, label, files, self.entry,
                                      self.policy, self.step_input)
        log = outcome.log[-2000:].decode("utf-8", "replace")
        try:
            value = checked_output(outcome, self.step, self.path)
        except CodeRunFailed as failed:
            return {"ok": False, "error": failed.envelope["message"],
                    "stack": failed.envelope["stack"][:2000], "log": log}
        return {"ok": True, "output": value, "log": log}


def _tools(candidates: _Candidates, ctx: HarnessContext,
           files: dict[str, str]) -> tuple[ToolRegistry, str, list[str]]:
    """run_code, submit_fix and (where a sandbox can run it) bash over the fixer's mounts."""
    from lwtool.harness.bash import BashUnavailable

    async def run_code(args: Any) -> dict[str, Any]:
        return await candidates.attempt(args)

    async def submit_fix(args: Any) -> dict[str, Any]:
        result = await candidates.attempt(args)
        return {"accepted": result.pop("ok"), "fixedSource": args["source"], **result}

    registry = ToolRegistry()
    registry.tools["run_code"] = Tool("run_code", run_code, "Run a candidate entrypoint "
                                      "source in the step's sandbox on the step input.",
                                      _SOURCE)
    registry.tools["submit_fix"] = Tool("submit_fix", submit_fix, "Submit the fixed "
                                        "entrypoint source (accepted when its output fits "
                                        "the step's output contract).", _SOURCE)
    workspace = ctx.workspace
    if workspace is None:
        return registry, NO_BASH, []
    space = dataclasses.replace(workspace, role="fixer")
    try:
        bash = space.bash()
    except BashUnavailable:
        return registry, NO_BASH, []
    own = next(m for m in bash.mounts if m.target == "/mnt/scratch/own")
    for name, content in files.items():
        with contextlib.suppress(NotARegularFile):  # a link planted on resume: not followed
            write_inside(own.source, name, content.encode("utf-8"))
    registry.tools["bash"] = bash.tool()
    return registry, short_hash(bash.capabilities()), space.store_ids()


def _brief(step: dict[str, Any], files: dict[str, str], entry: str, task: FixStepTask) -> str:
    error = task.original_attempt_error
    parts = [f"Step `{step.get('id')}` failed: {error.get('message')}"]
    if error.get("stack"):
        parts.append(f"Stack:\n{str(error['stack'])[:2000]}")
    if error.get("log"):
        parts.append(f"The code's log:\n{str(error['log'])[-2000:]}")
    parts.append(f"Entrypoint `{entry}`:\n```ts\n{files[entry]}\n```")
    for name, content in files.items():
        if name != entry:
            parts.append(f"File `{name}` (importable as ./{name}):\n```ts\n{content}\n```")
    parts.append("Step input:\n" + json.dumps(task.step_input, ensure_ascii=False)[:8000])
    parts.append("Output contract:\n" + json.dumps(step.get("output") or {"mode": "any JSON"},
                                                   ensure_ascii=False))
    return "\n\n".join(parts)
