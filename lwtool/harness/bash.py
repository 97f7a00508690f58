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
  (lwtool.harness.pathcheck) and the limits. Weaker: a guard of the command's words.

Whatever the sandbox, each command's paths are resolved (`..`, symlinks) and checked
before it runs; a refused command raises BashRefused, a command over its time limit
BashLimit (both end as `harness.tool_call.failed` with the reason, and the model is
told); output over the cap stops the command and comes back cut, marked `truncated`.
Each command starts in the working directory with a clean environment.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from lwtool.harness import pids
from lwtool.harness.pathcheck import BashRefused, Root, View, check_command, host_roots
from lwtool.harness.stores import Mount
from lwtool.runtime.run_state import short_hash
from lwtool.tools import Tool

Sandbox = Literal["bwrap", "path-check"]
SANDBOX_ENV = "LWTOOL_BASH_SANDBOX"
MAX_COMMAND_CHARS = 64 * 1024
SANDBOX_UID = "1000"
INPUT_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["command"],
                "properties": {"command": {"type": "string",
                                           "description": "A bash command line."}}}
# Applies the file-size limit and joins the pids cgroup, then becomes the sandbox.
_LIMITS = ('ulimit -f "$1" || exit 125; if [ -n "$2" ]; then echo 0 > "$2" || exit 125; fi;'
           ' shift 2; exec "$@"')
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

    def __post_init__(self) -> None:
        if self.sandbox not in ("bwrap", "path-check"):
            raise ValueError(f"bash sandbox must be bwrap or path-check, not {self.sandbox!r}")
        if not (self.timeout > 0 and self.max_output_bytes > 0 and self.max_processes > 0
                and self.max_file_bytes >= 512 and self.tmp_bytes > 0):
            raise ValueError("bash limits must be positive")

    @classmethod
    def from_env(cls, **limits: Any) -> BashOptions:
        """The default sandbox, or the one LWTOOL_BASH_SANDBOX opts into."""
        return cls(sandbox=os.environ.get(SANDBOX_ENV) or "bwrap", **limits)  # type: ignore[arg-type]


@cache
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox a command here (None when it can)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt install bubblewrap)"
    probe = subprocess.run(["bwrap", *namespace_args(), "--ro-bind", "/usr", "/usr",
                            *system_args(), "/usr/bin/true"],
                           capture_output=True, text=True, timeout=30, check=False)
    if probe.returncode != 0:
        return f"bubblewrap cannot create its sandbox here: {probe.stderr.strip()}"
    return None


class BashTool:
    """One session's bash: `mounts` (own scratch first) as the command sees them."""

    def __init__(self, mounts: list[Mount], options: BashOptions, tmp_dir: Path) -> None:
        if options.sandbox == "bwrap":
            problem = bwrap_problem()
            if problem is not None:
                raise BashUnavailable(
                    f"the bash tool cannot run: {problem}. Install bubblewrap, or opt "
                    f"into the weaker path check with {SANDBOX_ENV}=path-check")
        self.mounts = sorted(mounts, key=lambda m: m.target)
        self.options = options
        self.tmp_dir = tmp_dir
        own = next(m for m in mounts if m.target == "/mnt/scratch/own")
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
                "tmpBytes": o.tmp_bytes}

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
        limit = pids.PidsLimit.create(self.options.max_processes)
        try:
            return await self._spawn(command, limit)
        finally:
            if limit is not None:
                await asyncio.to_thread(limit.close)

    async def _spawn(self, command: str, limit: pids.PidsLimit | None) -> dict[str, Any]:
        o = self.options
        argv = ["/bin/sh", "-c", _LIMITS, "lwtool-bash", str(o.max_file_bytes // 512),
                str(limit.procs) if limit else "", *self._argv(command)]
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.workdir,
               "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
        if o.sandbox == "path-check":
            self.tmp_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            env["TMPDIR"] = str(self.tmp_dir)
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True, env=env,
            cwd=self.workdir if o.sandbox == "path-check" else None)
        capture = _Capture(o.max_output_bytes, lambda: _kill(proc))
        timed_out = False
        try:
            assert proc.stdout is not None and proc.stderr is not None
            await asyncio.wait_for(asyncio.gather(capture.read(proc.stdout, 0),
                                                  capture.read(proc.stderr, 1)), o.timeout)
        except TimeoutError:
            timed_out = True
        finally:
            _kill(proc)
            code = await proc.wait()
        stdout, stderr = (b.decode("utf-8", "replace") for b in capture.parts)
        if timed_out:
            raise BashLimit(f"timed out after {o.timeout:g} s; the command was stopped"
                            + _tail(stdout, stderr))
        result: dict[str, Any] = {"exitCode": code, "stdout": stdout, "stderr": stderr}
        if capture.cut:
            result["truncated"] = True
            result["note"] = (f"output cut at {o.max_output_bytes} bytes; the command "
                              "was stopped")
        return result

    def _argv(self, command: str) -> list[str]:
        shell = ["/bin/bash", "--noprofile", "--norc", "-c", command]
        if self.options.sandbox == "path-check":
            return shell
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


def namespace_args() -> list[str]:
    return ["--unshare-all", "--unshare-user", "--uid", SANDBOX_UID, "--gid", SANDBOX_UID,
            "--disable-userns", "--cap-drop", "ALL"]


def system_args() -> list[str]:
    """/bin, /lib... as on the host (symlinks into /usr on merged-/usr systems)."""
    args: list[str] = []
    for path in ("/bin", "/lib", "/lib32", "/lib64", "/sbin"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args + ["--ro-bind-try", "/etc/alternatives", "/etc/alternatives"]


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
    if proc.returncode is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass


def _tail(stdout: str, stderr: str) -> str:
    tail = (stdout + stderr)[-2000:]
    return f"; its last output:\n{tail}" if tail.strip() else ""
