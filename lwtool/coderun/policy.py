"""A code.run step's `sandbox` policy and limits -> how its Deno process is started.

With `network`, `env` and `fs` all `deny` the process gets no allow flag at all: no
read, write, net, env, run, ffi or sys; an attempt throws NotCapable inside the code.
`network: allow` adds `--allow-net=` with exactly the workflow's `permissions.network`
hosts (none listed: no network at all) and `--deny-net=` with every private, loopback
and link-local IPv4 range and the IPv6 loopback but the addresses listed (Deno checks
what a name resolves to against them: an allowed name rebound to 169.254.169.254 is
refused). The step's granted secrets are its environment, readable with
`Deno.env.get` (`--allow-env=` those names). `env: allow` adds `--allow-env` and passes
this process's environment too, without any variable whose name says key, token,
secret, password or credential. `fs: read` adds `--allow-read`, `fs: allow` adds
`--allow-read --allow-write`. Subprocesses and FFI are never allowed, remote and npm
modules never load.

Where bubblewrap can run (the bash tool's probe) and `fs` is `deny`, Deno itself runs
inside it too, as a second wall: every namespace unshared (no network unless
`network: allow` with hosts listed; then /etc/hosts and /etc/resolv.conf too, for
names), an unprivileged uid, no capabilities, only /usr, the deno binary and a small
tmpfs /tmp visible. `LWTOOL_CODE_SANDBOX=deno` turns that layer off.

Each execution has a DENO_DIR of its own (on the wall's tmpfs, else a fresh temporary
folder removed afterwards), so `localStorage` and `caches` never outlive it: nothing
passes between runs, and a replayed attempt sees what the live one saw. There is no
shared Deno cache: the sources are data: URLs, and a warm shared cache saved about
2 ms of a 26 ms start (measured in bubblewrap).

Limits: wall-clock time (`sandbox.timeoutMs`, else the run's code timeout, default
30 s), memory (`sandbox.memoryMb`, default 512: the V8 heap cap, and RLIMIT_DATA at that
plus 1 GiB for buffers outside the heap and Deno's own reservations), the returned
value (16 MiB as JSON) and the kept log (1 MiB of stdout and stderr).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from lwtool.capability.secrets import CREDENTIAL_NAME

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MEMORY_MB = 512
OUTPUT_CAP = 16 * 1024 * 1024
LOG_CAP = 1024 * 1024
OUTER_ENV = "LWTOOL_CODE_SANDBOX"
TMP_BYTES = 64 << 20
INNER_DENO = "/opt/lwtool/deno"
WALLED_DENO_DIR = "/tmp/deno"  # on the wall's own tmpfs
DATA_HEADROOM_MB = 1024  # Deno reserves ~1 GiB of writable address space at start


@dataclass(frozen=True)
class CodePolicy:
    network: str = "deny"
    env: str = "deny"
    fs: str = "deny"
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_mb: int = DEFAULT_MEMORY_MB
    output_bytes: int = OUTPUT_CAP
    log_bytes: int = LOG_CAP
    hosts: tuple[str, ...] = ()  # Deno --allow-net entries (permissions.network)
    denied_ranges: tuple[str, ...] = ()  # Deno --deny-net entries
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)  # the grant

    @classmethod
    def of_step(cls, settings: dict[str, Any], run_timeout_s: float | None = None,
                network: list[str] | None = None,
                secrets: Mapping[str, str] | None = None) -> CodePolicy:
        """The policy of a step's `with` (its `sandbox`), under the run's code timeout,
        the workflow's `permissions.network` and the step's granted secrets."""
        from lwtool.capability.hosts import deny_ranges, parse_all

        sandbox = settings.get("sandbox") or {}
        patterns = parse_all(network or []) if sandbox.get("network") == "allow" else []
        policy = cls(network=str(sandbox.get("network", "deny")),
                     env=str(sandbox.get("env", "deny")), fs=str(sandbox.get("fs", "deny")),
                     hosts=tuple(p.deno() for p in patterns),
                     denied_ranges=tuple(deny_ranges(patterns)) if patterns else (),
                     secrets=dict(secrets or {}))
        if run_timeout_s is not None:
            policy = replace(policy, timeout_s=float(run_timeout_s))
        timeout_ms = _positive_int(sandbox.get("timeoutMs"))
        if timeout_ms is not None:
            policy = replace(policy, timeout_s=timeout_ms / 1000)
        memory = _positive_int(sandbox.get("memoryMb"))
        if memory is not None:
            policy = replace(policy, memory_mb=memory)
        return policy

    def permission_flags(self) -> list[str]:
        flags: list[str] = []
        if self.reaches_network:
            flags += [f"--allow-net={','.join(self.hosts)}",
                      f"--deny-net={','.join(self.denied_ranges)}"]
        if self.env == "allow":
            flags.append("--allow-env")
        elif self.secrets:
            flags.append(f"--allow-env={','.join(sorted(self.secrets))}")
        if self.fs in ("read", "allow"):
            flags.append("--allow-read")
        if self.fs == "allow":
            flags.append("--allow-write")
        return flags

    def deno_args(self, import_map: str) -> list[str]:
        return ["run", "--no-prompt", "--no-config", "--no-lock", "--no-remote", "--no-npm",
                "--quiet", "--no-check", f"--import-map={import_map}",
                f"--v8-flags=--max-old-space-size={self.memory_mb}",
                *self.permission_flags()]

    def walled(self) -> bool:
        """Whether Deno runs inside bubblewrap too (fs deny, bubblewrap usable, not
        turned off by LWTOOL_CODE_SANDBOX=deno)."""
        from lwtool.sandbox.bwrap import bwrap_problem

        return self.fs == "deny" and os.environ.get(OUTER_ENV) != "deno" \
            and bwrap_problem() is None

    def outer_wall(self, argv: list[str]) -> list[str]:
        """`argv` (a deno command) inside bubblewrap, where it can run; else as it is.
        Inside, DENO_DIR lies on the sandbox's own tmpfs: storage of its own."""
        from lwtool.sandbox.bwrap import namespace_args, system_args

        if not self.walled():
            return argv
        # The binary at a fixed path: its own may lie under /tmp, which the tmpfs hides.
        wall = ["bwrap", *namespace_args(), "--die-with-parent", "--new-session",
                "--ro-bind", "/usr", "/usr", *system_args(), "--proc", "/proc",
                "--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
                "--ro-bind", argv[0], INNER_DENO, "--dir", WALLED_DENO_DIR,
                "--setenv", "DENO_DIR", WALLED_DENO_DIR, "--chdir", "/tmp"]
        if self.reaches_network:  # and how names resolve (the host's files, read-only)
            wall.append("--share-net")
            for name in ("/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf"):
                wall += ["--ro-bind-try", name, name]
        return [*wall, INNER_DENO, *argv[1:]]

    def environment(self, deno_dir: str) -> dict[str, str]:
        """The process environment: the granted secrets and Deno's own settings, and
        with env: allow this process's variables but those naming a credential.
        `deno_dir` is this execution's own (localStorage and caches live there)."""
        base = {k: v for k, v in os.environ.items() if not CREDENTIAL_NAME.search(k)} \
            if self.env == "allow" else {}
        return {**base, **self.secrets, "DENO_DIR": deno_dir, "NO_COLOR": "1",
                "DENO_NO_UPDATE_CHECK": "1", "DENO_NO_PROMPT": "1"}

    @property
    def reaches_network(self) -> bool:
        """network: allow with at least one host listed."""
        return self.network == "allow" and bool(self.hosts)

    @property
    def data_limit_bytes(self) -> int:
        return (self.memory_mb + DATA_HEADROOM_MB) * 1024 * 1024


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None
