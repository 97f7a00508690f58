"""One code.run execution: a Deno process with the step's permissions, its frames and
tool calls, its limits, and the reaping of its process group whatever happens.

The bootstrap (lwtool/_data/coderun/bootstrap.js) gets `{secret, input, entry}` on
stdin and answers on stderr with frames `<secret> <json>` on lines of their own: tool
calls and the final result or error. Any other output, on stdout or stderr, is the
code's log (kept up to the policy's cap). Tool calls are answered on stdin in the
order they finish; `on_call(n, name, args)` runs them (the n-th call of this
execution) and raises to make the call fail inside the code, or raises CodeAborted to
stop the execution altogether.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from lwtool.coderun.deno import deno_binary
from lwtool.coderun.policy import WALLED_DENO_DIR, CodePolicy
from lwtool.coderun.source import import_map, module_urls, specifier

ToolHandler = Callable[[int, str, Any], Awaitable[Any]]
_OOM = re.compile(rb"out of memory|heap limit|Allocation failed", re.IGNORECASE)
# RLIMIT_DATA set before exec, so bubblewrap's sandbox and Deno inherit it.
_LIMIT = 'ulimit -d "$1" || exit 125; shift; exec "$@"'
_DATA_URL = re.compile(r"data:([a-z/+.-]+);base64,([A-Za-z0-9+/=]*)(\.{3,})?([A-Za-z0-9+/=]*)")
_DENIED = re.compile(r'Unsupported scheme "lwtool-denied" for module "lwtool-denied://\d+/'
                     r'([^"]*)"\. Supported schemes:(?:\n +- "[a-z]+")*')
# Deno's advice names its own flags; the step's `with.sandbox` setting is what to change.
_ALLOW_FLAG = re.compile(r"run again with the --allow-(read|write|net|env|run|ffi|sys) flag")
_SETTING = {
    "read": "allow it with `sandbox: {fs: read}` in the step's `with`",
    "write": "allow it with `sandbox: {fs: allow}` in the step's `with`",
    "net": "allow it with `sandbox: {network: allow}` in the step's `with` and the host "
           "in permissions.network",
    "env": "allow it with `sandbox: {env: allow}` in the step's `with`",
    "run": "code.run never starts processes",
    "ffi": "code.run never loads native libraries",
    "sys": "code.run never reads system information",
}


class CodeAborted(Exception):
    """Raised by a tool handler to stop the execution (the error is the step's)."""


@dataclass
class CodeOutcome:
    """`error` is None on success (then `value` is the JSON the code returned)."""

    value: Any = None
    error: str | None = None
    cause: str = ""  # threw | not_json | timeout | memory | output_cap | exited
    stack: str = ""
    log: bytes = b""
    log_truncated: bool = False
    duration_ms: int = 0
    tool_calls: int = 0
    denied: list[str] = field(default_factory=list)  # host:port permissions.network refused

    @property
    def ok(self) -> bool:
        return self.error is None


@cache
def _bootstrap_url() -> str:
    from lwtool._resources import data_path

    text = data_path("coderun", "bootstrap.js").read_bytes()
    return "data:text/javascript;base64," + base64.b64encode(text).decode()


async def run_code(files: dict[str, str], entrypoint: str, policy: CodePolicy,
                   step_input: Any, on_call: ToolHandler) -> CodeOutcome:
    """Run the entrypoint's `run({ input, tools })` once; never raises for what the code
    does (that is the outcome), only CodeAborted from `on_call` and DenoMissing."""
    run = _Execution(files, policy, on_call)
    return await run.execute(entrypoint, step_input)


class _Execution:
    def __init__(self, files: dict[str, str], policy: CodePolicy, on_call: ToolHandler) -> None:
        self.policy = policy
        self.on_call = on_call
        self.secret = secrets.token_hex(16).encode()
        self.log = bytearray()
        self.log_truncated = False
        self.calls = 0
        self.denied: list[str] = []
        self.call_tasks: set[asyncio.Task[None]] = set()
        self.final: asyncio.Future[CodeOutcome] | None = None
        self.proc: asyncio.subprocess.Process | None = None
        self.urls = module_urls(files)
        self.names = {url: name for name, url in self.urls.items()}
        self.names[_bootstrap_url()] = "lwtool:bootstrap.js"

    async def execute(self, entrypoint: str, step_input: Any) -> CodeOutcome:
        started = time.perf_counter()
        policy = self.policy
        argv = ["/bin/sh", "-c", _LIMIT, "lwtool-code", str(policy.data_limit_bytes // 1024),
                *policy.outer_wall([deno_binary(), *policy.deno_args(
                    import_map(self.urls, policy.fs == "deny")), _bootstrap_url()])]
        own_dir = contextlib.nullcontext(WALLED_DENO_DIR) if policy.walled() else \
            tempfile.TemporaryDirectory(prefix="lwtool-deno-")  # a host folder only unwalled
        with own_dir as deno_dir:
            outcome = await self._execute(argv, policy, deno_dir, entrypoint, step_input)
        outcome.duration_ms = int((time.perf_counter() - started) * 1000)
        return outcome

    async def _execute(self, argv: list[str], policy: CodePolicy, deno_dir: str,
                       entrypoint: str, step_input: Any) -> CodeOutcome:
        # Imported when code runs: it loads ctypes, which a run without code never needs.
        from lwtool.sandbox.confine import die_with_parent

        self.final = asyncio.get_running_loop().create_future()
        proc = self.proc = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, env=policy.environment(deno_dir), cwd="/",
            preexec_fn=die_with_parent)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        readers = [asyncio.ensure_future(self._read_log(proc.stdout)),
                   asyncio.ensure_future(self._read_frames(proc.stderr))]
        try:
            start = {"secret": self.secret.decode(), "input": step_input,
                     "entry": specifier(entrypoint)}
            await self._send(start)
            async with asyncio.timeout(policy.timeout_s):
                outcome = await self.final
        except TimeoutError:
            outcome = CodeOutcome(error=f"the code ran longer than {policy.timeout_s:g} s "
                                  "and was stopped", cause="timeout")
        finally:
            _kill(proc)
            await proc.wait()
            for task in [*self.call_tasks]:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.gather(*readers, return_exceptions=True), 5)
        if outcome.cause == "exited":
            outcome = self._exit_outcome(proc.returncode)
        outcome.log = bytes(self.log)
        outcome.log_truncated = self.log_truncated
        outcome.tool_calls = self.calls
        outcome.denied = self.denied
        return outcome

    # -- output --------------------------------------------------------------------------

    def _keep_log(self, data: bytes) -> None:
        room = self.policy.log_bytes - len(self.log)
        if len(data) > room:
            self.log += data[:max(room, 0)]
            self.log_truncated = True
        else:
            self.log += data

    async def _read_log(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self._keep_log(chunk)

    async def _read_frames(self, stream: asyncio.StreamReader) -> None:
        """Frames and log lines; reads to the end whatever happens (a pipe left unread
        would keep the process's transport, and its reaping, from finishing)."""
        prefix = self.secret + b" "
        line = bytearray()
        cap = self.policy.output_bytes + 4096
        discarding = False  # inside a line already judged (too long)
        while chunk := await stream.read(65536):
            start = 0
            while start < len(chunk):
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                if discarding:
                    pass
                elif end < 0 and (len(line) + len(piece) > cap or (
                        len(line) + len(piece) > 65536 and not _could_be(line + piece, prefix))):
                    if _could_be(line + piece, prefix):
                        self._finish(self._over_cap())
                        discarding = True
                    else:
                        self._keep_log(bytes(line + piece))
                    line.clear()
                    piece = b""
                else:
                    line += piece
                if end < 0:
                    break
                if not discarding:
                    self._line(bytes(line), prefix)
                discarding = False
                line.clear()
                start = end + 1
        if line and not discarding:
            self._line(bytes(line), prefix)
        self._finish(CodeOutcome(error="exited", cause="exited"))

    def _line(self, line: bytes, prefix: bytes) -> None:
        if not line.startswith(prefix):
            if line:
                self._keep_log(line + b"\n")
            return
        try:
            frame = json.loads(line[len(prefix):])
        except ValueError:
            frame = None
        if not isinstance(frame, dict):  # never let a bad frame stop the reader
            self._finish(CodeOutcome(error="the sandbox sent a damaged frame", cause="exited"))
            return
        kind = frame.get("t")
        if kind == "call":
            self._call(frame)
        elif kind == "denied":
            target = str(frame.get("target", ""))[:300]
            if target not in self.denied:
                self.denied.append(target)
        elif kind == "result":
            if len(line) > self.policy.output_bytes:
                self._finish(self._over_cap())
            else:
                self._finish(CodeOutcome(value=frame.get("value")))
        elif kind == "error":
            name, message = str(frame.get("name", "Error")), str(frame.get("message", ""))
            cause = "not_json" if message.startswith(("the value", "run() returned")) and \
                name == "TypeError" else "threw"
            text = f"{name}: {message}" if cause == "threw" else \
                f"the code returned a value that is not JSON: {message}"
            self._finish(CodeOutcome(error=self._readable(text), cause=cause,
                                     stack=self._readable(str(frame.get("stack", "")))))

    def _over_cap(self) -> CodeOutcome:
        return CodeOutcome(error=f"the code returned more than {self.policy.output_bytes} "
                           "bytes of JSON (the output cap)", cause="output_cap")

    def _finish(self, outcome: CodeOutcome) -> None:
        if self.final is not None and not self.final.done():
            self.final.set_result(outcome)

    def _readable(self, text: str) -> str:
        """Module URLs (long data: URLs) in messages and stacks -> the files' names."""
        def name_of(found: re.Match[str]) -> str:
            head, cut, tail = found.group(2), found.group(3), found.group(4)
            for url, name in self.names.items():
                body = url.split(",", 1)[1]
                if (body == head and not cut) or (cut and body.startswith(head)
                                                  and body.endswith(tail)):
                    return name
            return found.group(0)

        text = _DATA_URL.sub(name_of, text)
        text = _DENIED.sub(r"import of '\1' refused: code.run loads only its own files", text)
        return _ALLOW_FLAG.sub(lambda m: _SETTING[m.group(1)], text)

    def _exit_outcome(self, code: int | None) -> CodeOutcome:
        tail = bytes(self.log[-2000:]).decode("utf-8", "replace").strip()
        if code in (-signal.SIGTRAP, 133, -signal.SIGKILL, 137) or _OOM.search(self.log[-4000:]):
            return CodeOutcome(error=f"the code ran out of memory (limit "
                               f"{self.policy.memory_mb} MiB) and was stopped", cause="memory")
        return CodeOutcome(error=f"the code's process exited with code {code} before "
                           f"returning" + (f"; its last output:\n{tail}" if tail else ""),
                           cause="exited")

    # -- tool calls ----------------------------------------------------------------------

    def _call(self, frame: dict[str, Any]) -> None:
        self.calls += 1
        number = frame.get("id")
        if number != self.calls:
            self._finish(CodeOutcome(error=f"the sandbox numbered a tool call {number}, "
                                     f"expected {self.calls}", cause="exited"))
            return
        task = asyncio.ensure_future(self._answer(number, str(frame.get("tool")),
                                                  frame.get("args")))
        self.call_tasks.add(task)
        task.add_done_callback(self.call_tasks.discard)

    async def _answer(self, number: int, name: str, args: Any) -> None:
        try:
            result = await self.on_call(number, name, args)
            reply: dict[str, Any] = {"id": number, "ok": True, "result": result}
        except CodeAborted as exc:
            if self.final is not None and not self.final.done():
                self.final.set_exception(exc)
            return
        except Exception as exc:  # noqa: BLE001 - any failure is the code's to handle
            reply = {"id": number, "ok": False, "error": str(exc)}
        await self._send(reply)

    async def _send(self, message: Any) -> None:
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(data + b"\n")
            await proc.stdin.drain()


def _could_be(line: bytes | bytearray, prefix: bytes) -> bool:
    """Whether a partial line may still turn out to be a frame."""
    return prefix.startswith(bytes(line[:len(prefix)]))


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
