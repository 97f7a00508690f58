"""The bash tool: a command run in a sandbox whose filesystem is only the session's
mounts (memory stores, scratch, staged skills) at `/mnt/...`, read-only where they are
read-only, plus the system's binaries and libraries read-only, a fresh /tmp per
command, no network, and limits: time, output, processes, file size.

Sandboxes:
- `bwrap` (default): bubblewrap (Debian package `bubblewrap`) with every namespace
  unshared (no network but an unconfigured loopback), an unprivileged uid, no
  capabilities, a tmpfs /tmp of bounded size. Where bwrap is missing or cannot make
  its namespaces the tool fails closed: the session does not start.
- `path-check` (opt in: `BashOptions(sandbox="path-check")` or
  `LWTOOL_BASH_SANDBOX=path-check`): the command runs on the host in the own scratch
  folder, the mounts at their host paths, guarded only by the path check
  (lwtool.harness.pathcheck) and the limits. NOT a sandbox: a guard of the command's
  words, which `$(...)`, variables or `eval` pass; the command can read and write
  whatever this user can. It gets a clean environment, no view of lwtool's process
  (lwtool.sandbox.confine) and dies with lwtool. Roles that read untrusted content
  (planner, fixer) get no path-check bash unless named in
  LWTOOL_BASH_PATH_CHECK_ROLES (e.g. `planner,fixer`); a warning says so at start.

Whatever the sandbox, each command's paths are resolved (`..`, symlinks) and checked
before it runs; a refused command raises BashRefused, a command over its time limit
BashLimit (both end as `harness.tool_call.failed` with the reason, and the model is
told); output over the cap stops the command and comes back cut, marked `truncated`.
Each command starts in the working directory with a clean environment. Limits per
command: time, output, processes and memory (cgroups where this process can make them;
else memory per process with RLIMIT_AS), file size; per writable mount (a memory store,
the scratch) `max_store_bytes`, watched while the command runs: a mount that grows past
it stops the command and fails the call; a later command may still remove files.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal

from lwtool.harness.pathcheck import BashRefused, Root, View, check_command, host_roots
from lwtool.harness.stores import Mount
from lwtool.record.ids import short_hash
from lwtool.sandbox import confine, pids
from lwtool.sandbox.bwrap import bwrap_problem, namespace_args, system_args
from lwtool.tools import Tool

Sandbox = Literal["bwrap", "path-check"]
SANDBOX_ENV = "LWTOOL_BASH_SANDBOX"
PATH_CHECK_ROLES_ENV = "LWTOOL_BASH_PATH_CHECK_ROLES"
UNTRUSTED_ROLES = ("planner", "fixer", "orchestrator")  # they read what models wrote
STORE_POLL_S = 0.1
MAX_COMMAND_CHARS = 64 * 1024
INPUT_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["command"],
                "properties": {"command": {"type": "string",
                                           "description": "A bash command line."}}}
# Applies the file-size limit (and RLIMIT_AS when $3 is set), joins the cgroups ($2),
# then becomes the sandbox.
_LIMITS = ('ulimit -f "$1" || exit 125; if [ -n "$3" ]; then ulimit -v "$3" || exit 125; fi;'
           ' for procs in $2; do echo 0 > "$procs" || exit 125; done; shift 3; exec "$@"')
_DEVICES = {"/dev/null": True, "/dev/zero": False, "/dev/urandom": False,
            "/dev/random": False, "/dev/stdin": False, "/dev/stdout": True,
            "/dev/stderr": True, "/dev/fd": True}


class BashUnavailable(Exception):
    """The sandbox cannot run here; the message says why and what to do."""


class BashLimit(Exception):
    """A command ran past its time limit and was stopped."""


@dataclass(frozen=True)
class BashOptions:
    sandbox: Sandbox = "bwrap"
    timeout: float = 30.0
    max_output_bytes: int = 64 * 1024
    max_processes: int = 256
    max_file_bytes: int = 1 << 30
    tmp_bytes: int = 256 << 20
    max_memory_bytes: int = 1 << 30
    max_store_bytes: int = 256 << 20

    def __post_init__(self) -> None:
        if self.sandbox not in ("bwrap", "path-check"):
            raise ValueError(f"bash sandbox must be bwrap or path-check, not {self.sandbox!r}")
        if not (self.timeout > 0 and self.max_output_bytes > 0 and self.max_processes > 0
                and self.max_file_bytes >= 512 and self.tmp_bytes > 0
                and self.max_memory_bytes >= 1 << 20 and self.max_store_bytes > 0):
            raise ValueError("bash limits must be positive")

    def refusal(self, role: str) -> str | None:
        """Why a session of `role` gets no bash with these options (None: it may)."""
        opted = {r.strip() for r in os.environ.get(PATH_CHECK_ROLES_ENV, "").split(",")}
        if self.sandbox == "path-check" and role in UNTRUSTED_ROLES and role not in opted:
            return (f"path-check bash is not a sandbox, and the {role} reads untrusted "
                    f"content: name it in {PATH_CHECK_ROLES_ENV} (e.g. {role}) to allow it")
        return None

    @classmethod
    def offered(cls, role: str) -> tuple[BashOptions | None, str | None]:
        """The bash a session of `role` gets here (the environment's sandbox), or None
        and why not (no bubblewrap; path-check for a role that reads untrusted content)."""
        options = cls.from_env()
        problem = options.refusal(role) if options.sandbox == "path-check" \
            else bwrap_problem()
        return (None, problem) if problem else (options, None)

    @classmethod
    def from_env(cls, **limits: Any) -> BashOptions:
        """The default sandbox, or the one LWTOOL_BASH_SANDBOX opts into."""
        return cls(sandbox=os.environ.get(SANDBOX_ENV) or "bwrap", **limits)  # type: ignore[arg-type]


class BashTool:
    """One session's bash: `mounts` (own scratch first) as the command sees them."""

    def __init__(self, mounts: list[Mount], options: BashOptions, tmp_dir: Path,
                 role: str = "agent") -> None:
        if options.sandbox == "bwrap":
            problem = bwrap_problem()
            if problem is not None:
                raise BashUnavailable(
                    f"the bash tool cannot run: {problem}. Install bubblewrap, or opt "
                    f"into the weaker path check with {SANDBOX_ENV}=path-check")
        else:
            refused = options.refusal(role)
            if refused:
                raise BashUnavailable(f"the bash tool cannot run: {refused}")
            _warn_path_check()
        # Host paths absolute: a relative data dir must not make every path look foreign.
        self.mounts = sorted((replace(m, source=Path(os.path.abspath(m.source)))
                              for m in mounts), key=lambda m: m.target)
        self.options = options
        self.tmp_dir = Path(os.path.abspath(tmp_dir))
        own = next(m for m in self.mounts if m.target == "/mnt/scratch/own")
        self.workdir = self._seen(own)
        self.view = View(self._roots(), self.workdir, self.workdir)

    def _seen(self, mount: Mount) -> str:
        """Where the command finds a mount: its /mnt path in the sandbox, else its host
        path."""
        return mount.target if self.options.sandbox == "bwrap" else str(mount.source)

    def _roots(self) -> tuple[Root, ...]:
        mounts = [Root(self._seen(m), str(m.source), m.writable) for m in self.mounts]
        if self.options.sandbox == "bwrap":
            extra = [Root("/tmp", None, True), Root("/dev", None, True),
                     Root("/proc", None, False)]
        else:
            extra = [Root(str(self.tmp_dir), str(self.tmp_dir), True)] + [
                Root(device, None, writable) for device, writable in _DEVICES.items()]
        return host_roots(mounts + extra)

    def capabilities(self) -> dict[str, Any]:
        """What the manifest pins (bashCapabilitiesHash)."""
        o = self.options
        return {"sandbox": o.sandbox, "network": False,
                "mounts": [{"path": self._seen(m), "mode": "rw" if m.writable else "ro"}
                           for m in self.mounts],
                "timeout": o.timeout, "maxOutputBytes": o.max_output_bytes,
                "maxProcesses": o.max_processes, "maxFileBytes": o.max_file_bytes,
                "tmpBytes": o.tmp_bytes, "maxMemoryBytes": o.max_memory_bytes,
                "maxStoreBytes": o.max_store_bytes}

    def description(self) -> str:
        lines = [f"- {self._seen(m)} ({'rw' if m.writable else 'ro'})" for m in self.mounts]
        where = "a sandbox with no network" if self.options.sandbox == "bwrap" else \
            "the host (paths outside the mounts are refused)"
        tmp = "/tmp (fresh for each command)" if self.options.sandbox == "bwrap" else \
            f"{self.tmp_dir} (temporary files)"
        return (f"Run a bash command in {where}. Each command starts in {self.workdir} "
                f"with a clean environment. Visible folders:\n" + "\n".join(lines)
                + f"\n- {tmp}\nThe time limit is {self.options.timeout:g} s; output past "
                f"{self.options.max_output_bytes} bytes is cut and stops the command.")

    def tool(self) -> Tool:
        async def bash(args: Any) -> dict[str, Any]:
            if not isinstance(args, dict) or set(args) - {"command"}:
                raise BashRefused("call bash with {\"command\": \"...\"}")
            return await self.run(args.get("command"))

        bash.__lwtool_version__ = short_hash(self.capabilities())  # type: ignore[attr-defined]
        return Tool("bash", bash, self.description(), INPUT_SCHEMA)

    async def run(self, command: object) -> dict[str, Any]:
        """Run one command; its exit code and output (cut at the cap)."""
        if not isinstance(command, str) or not command.strip():
            raise BashRefused("the command must be a non-empty string")
        if len(command) > MAX_COMMAND_CHARS or "\x00" in command:
            raise BashRefused(f"the command must be text of at most {MAX_COMMAND_CHARS} "
                              "characters")
        check_command(command, self.view)
        limit = pids.PidsLimit.create(self.options.max_processes, self.options.max_memory_bytes)
        try:
            return await self._spawn(command, limit)
        finally:
            if limit is not None:
                await asyncio.to_thread(limit.close)

    async def _spawn(self, command: str, limit: pids.PidsLimit | None) -> dict[str, Any]:
        o = self.options
        per_process = "" if limit is not None and limit.limits_memory else \
            str(o.max_memory_bytes // 1024)
        file_bytes = min(o.max_file_bytes, o.max_store_bytes)  # one file cannot fill a store
        argv = ["/bin/sh", "-c", _LIMITS, "lwtool-bash", str(max(file_bytes // 512, 1)),
                limit.join if limit else "", per_process, *self._argv(command)]
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.workdir,
               "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
        if o.sandbox == "path-check":
            self.tmp_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            env["TMPDIR"] = str(self.tmp_dir)
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, env=env,
            cwd=self.workdir if o.sandbox == "path-check" else None,
            preexec_fn=confine.die_with_parent)
        capture = _Capture(o.max_output_bytes, lambda: _kill(proc))
        timed_out, over = False, None
        before = await asyncio.to_thread(self._store_sizes)
        watch = asyncio.ensure_future(self._watch_stores(proc, before))
        try:
            assert proc.stdout is not None and proc.stderr is not None
            async with asyncio.timeout(o.timeout):
                await asyncio.gather(capture.read(proc.stdout, 0), capture.read(proc.stderr, 1))
                await proc.wait()  # its output closed: let it exit before anything is killed
        except TimeoutError:
            timed_out = True
        finally:
            watch.cancel()
            _kill(proc)
            code = await proc.wait()
            over = None if watch.cancelled() or not watch.done() else watch.result()
        stdout, stderr = (b.decode("utf-8", "replace") for b in capture.parts)
        over = over or self._over_quota(before)
        if over:
            raise BashLimit(over + _tail(stdout, stderr))
        if timed_out:
            raise BashLimit(f"timed out after {o.timeout:g} s; the command was stopped"
                            + _tail(stdout, stderr))
        result: dict[str, Any] = {"exitCode": code, "stdout": stdout, "stderr": stderr}
        if capture.cut:
            result["truncated"] = True
            result["note"] = (f"output cut at {o.max_output_bytes} bytes; the command "
                              "was stopped")
        return result

    def _writable(self) -> list[tuple[str, Path]]:
        """The folders a command may fill: its writable mounts, and in path-check mode
        its temporary folder (bubblewrap's /tmp is a bounded tmpfs)."""
        found = [(self._seen(m), m.source) for m in self.mounts if m.writable]
        if self.options.sandbox == "path-check":
            found.append((str(self.tmp_dir), self.tmp_dir))
        return found

    def _store_sizes(self) -> dict[str, int]:
        cap = self.options.max_store_bytes
        return {seen: _tree_bytes(host, cap) for seen, host in self._writable()}

    def _over_quota(self, before: dict[str, int]) -> str | None:
        """Why a writable folder that grew is over `max_store_bytes` (None: none is);
        one already over may shrink (so a command can remove files)."""
        cap = self.options.max_store_bytes
        for seen, size in self._store_sizes().items():
            if size > cap and size > before.get(seen, 0):
                return (f"{seen} holds more than its limit of {cap} bytes; the command "
                        "was stopped (remove files to go on)")
        return None

    async def _watch_stores(self, proc: asyncio.subprocess.Process,
                            before: dict[str, int]) -> str | None:
        """Poll the writable folders while the command runs; stop it once one is over."""
        while proc.returncode is None:
            await asyncio.sleep(STORE_POLL_S)
            over = await asyncio.to_thread(self._over_quota, before)
            if over:
                _kill(proc)
                return over
        return None

    def _argv(self, command: str) -> list[str]:
        shell = ["/bin/bash", "--noprofile", "--norc", "-c", command]
        if self.options.sandbox == "path-check":
            return [*confine.host_wrapper(), *shell]
        binds: list[str] = []
        for mount in self.mounts:
            binds += ["--bind" if mount.writable else "--ro-bind", str(mount.source),
                      mount.target]
        return ["bwrap", *namespace_args(), "--die-with-parent", "--new-session",
                "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin",
                "--setenv", "HOME", self.workdir, "--setenv", "LANG", "C.UTF-8",
                "--setenv", "TMPDIR", "/tmp", "--ro-bind", "/usr", "/usr", *system_args(),
                "--proc", "/proc", "--dev", "/dev",
                "--size", str(self.options.tmp_bytes), "--tmpfs", "/tmp",
                *binds, "--chdir", self.workdir, *shell]


class _Capture:
    """stdout and stderr up to a shared cap; past it, `on_cut` stops the command."""

    def __init__(self, cap: int, on_cut: Any) -> None:
        self.cap = cap
        self.parts = [bytearray(), bytearray()]
        self.cut = False
        self.on_cut = on_cut

    async def read(self, stream: asyncio.StreamReader, index: int) -> None:
        while chunk := await stream.read(65536):
            room = self.cap - len(self.parts[0]) - len(self.parts[1])
            if len(chunk) > room:
                self.parts[index] += chunk[:max(room, 0)]
                if not self.cut:
                    self.cut = True
                    self.on_cut()
                continue
            self.parts[index] += chunk


def _kill(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL the command's process group, what it left in the background included
    (the group id stays reserved while any member lives)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass


def _tree_bytes(root: Path, cap: int) -> int:
    """Bytes of the files under `root` (links not followed), counted up to past `cap`."""
    total = 0
    for folder, dirs, files in os.walk(root):
        for name in files + dirs:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                continue
        if total > cap:
            break
    return total


@cache
def _warn_path_check() -> None:
    """Once per process: what path-check mode does not protect."""
    hidden = confine.host_wrapper() or confine.hide_own_process()
    sys.stderr.write(
        "lwtool: warning: bash runs in path-check mode, which is NOT a sandbox: commands "
        "run on this machine as this user and can read and write any file it can "
        "($(...), variables and eval pass the path check)"
        + ("" if hidden else "; lwtool's own environment is visible to them") + ". "
        "Install bubblewrap for the real sandbox.\n")


def _tail(stdout: str, stderr: str) -> str:
    tail = (stdout + stderr)[-2000:]
    return f"; its last output:\n{tail}" if tail.strip() else ""
