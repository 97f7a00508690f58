"""The Deno sandbox on its own: what code may do under `deny`, the limits, the frame
channel that user output cannot forge, values that are not JSON, and a host that
survives all of it with no process left behind."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from lwtool.coderun.policy import CodePolicy
from lwtool.coderun.runner import CodeOutcome, run_code
from lwtool.coderun.source import PinBroken, checked_files, import_map, module_urls


async def _no_tools(number: int, name: str, args: Any) -> Any:
    raise RuntimeError(f"no tool '{name}' here")


def run(source: str, step_input: Any = None, on_call: Any = _no_tools,
        files: dict[str, str] | None = None, **limits: Any) -> CodeOutcome:
    policy = CodePolicy(**{"timeout_s": 10.0, **limits})
    return asyncio.run(run_code({"main.ts": source, **(files or {})}, "main.ts", policy,
                                step_input, on_call))


def test_run_gets_input_and_returns_json() -> None:
    out = run("export async function run({ input }: { input: { n: number } }) "
              "{ return { twice: input.n * 2, when: new Date(0) }; }", {"n": 21})
    assert out.ok, out.error
    assert out.value == {"twice": 42, "when": "1970-01-01T00:00:00.000Z"}


def test_files_import_each_other() -> None:
    out = run('import { k } from "./lib.ts"; export async function run() { return k; }',
              files={"lib.ts": "export const k: number = 7;"})
    assert out.ok and out.value == 7


def test_tools_proxy_round_trip_and_failures() -> None:
    seen: list[tuple[int, str, Any]] = []

    async def on_call(number: int, name: str, args: Any) -> Any:
        seen.append((number, name, args))
        if name == "broken":
            raise RuntimeError("it broke")
        return {"echo": args}

    out = run("""export async function run({ tools }) {
      const [a, b] = await Promise.all([tools.one({ x: 1 }), tools.two()]);
      let caught = "";
      try { await tools.broken({}); } catch (e) { caught = String(e.message); }
      return { a, b, caught };
    }""", on_call=on_call)
    assert out.ok, out.error
    assert out.value == {"a": {"echo": {"x": 1}}, "b": {"echo": {}},
                         "caught": "tool 'broken' failed: it broke"}
    assert seen == [(1, "one", {"x": 1}), (2, "two", {}), (3, "broken", {})]


def test_non_json_tool_arguments_fail_in_the_code() -> None:
    out = run("export async function run({ tools }) { return await tools.t({ n: 1n }); }")
    assert not out.ok and "tools.t(args)" in str(out.error) and "bigint" in str(out.error)
    assert out.tool_calls == 0


@pytest.mark.parametrize("attempt, capability", [
    ('await fetch("http://127.0.0.1:9/")', "blocked"),
    ('Deno.env.get("HOME")', "Requires env access"),
    ('await Deno.readTextFile("/etc/passwd")', "Requires read access"),
    ('await Deno.writeTextFile("/tmp/lwtool-pwned", "x")', "Requires write access"),
    ('new Deno.Command("/usr/bin/id").outputSync()', "Requires run access"),
    ('Deno.dlopen("libc.so.6", {})', "Requires ffi access"),
    ("Deno.hostname()", "Requires sys access"),
    ('await import("file:///etc/hostname", { with: { type: "text" } })', "refused"),
    ('await import("/etc/passwd")', "refused"),
    ('await import("../../../../etc/passwd")', "not in import map"),
    ('await import("https://example.com/x.js")', "refused"),
    ('await import("npm:left-pad")', "npm"),
])
def test_denied_capabilities_throw_inside_the_code(attempt: str, capability: str) -> None:
    out = run(f"export async function run() {{ return {attempt}; }}")
    assert not out.ok and out.cause == "threw"
    assert capability in str(out.error), out.error
    assert "root:" not in str(out.error) + out.log.decode()
    assert not os.path.exists("/tmp/lwtool-pwned")


def test_denied_code_can_catch_and_go_on() -> None:
    out = run('export async function run() { try { Deno.env.get("HOME"); } '
              'catch (e) { return e.name; } }')
    assert out.ok and out.value == "NotCapable"


def test_a_loopback_listener_sees_no_connection() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        out = run(f"""export async function run() {{
          const tries = [];
          try {{ await fetch("http://127.0.0.1:{port}/"); }} catch (e) {{ tries.push(e.name); }}
          try {{ await Deno.connect({{ hostname: "127.0.0.1", port: {port} }}); }}
          catch (e) {{ tries.push(e.name); }}
          try {{ new WebSocket("ws://127.0.0.1:{port}/"); }} catch (e) {{ tries.push(e.name); }}
          return tries;
        }}""")
        assert out.ok, out.error
        assert out.value[:2] == ["NotCapable", "NotCapable"]
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


def _policy(hosts: list[str], secrets: dict[str, str] | None = None,
            **sandbox: str) -> dict[str, Any]:
    """CodePolicy fields for a step's sandbox under permissions.network and a grant."""
    policy = CodePolicy.of_step({"sandbox": sandbox}, network=hosts, secrets=secrets)
    return {f: getattr(policy, f) for f in ("network", "env", "fs", "hosts",
                                            "denied_ranges", "secrets")}


CONNECT = ("export async function run({{ input }}) {{ const out = []; for (const host of input) "
           "{{ try {{ const c = await Deno.connect({{ hostname: host, port: {port} }}); "
           "c.close(); out.push('ok'); }} catch (e) {{ out.push(e.name); }} }} return out; }}")


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback listener that accepts nothing by itself (0.5 s accept timeout)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.5)
    yield server
    server.close()


def test_network_allow_connects_to_the_listed_hosts_only(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    # the address listed: reached; `localhost` is not listed; 127.0.0.2 is another
    # address in the loopback range (denied: only listed addresses are let through)
    out = run(CONNECT.format(port=port), ["127.0.0.1", "localhost", "127.0.0.2"],
              **_policy([f"127.0.0.1:{port}"], network="allow"))
    assert out.ok, out.error
    assert out.value == ["ok", "NotCapable", "NotCapable"]
    assert out.denied == [f"localhost:{port}", f"127.0.0.2:{port}"]


def test_an_allowed_name_resolving_to_a_private_address_is_refused(
        listener: socket.socket) -> None:
    """DNS rebinding: `localhost` is listed, but it resolves to 127.0.0.1, which is not
    (Deno checks the resolved address against --deny-net)."""
    port = listener.getsockname()[1]
    out = run(CONNECT.format(port=port), ["localhost"],
              **_policy([f"localhost:{port}"], network="allow"))
    assert out.ok and out.value == ["NotCapable"], out
    assert out.denied == [f"127.0.0.1:{port}"]
    with pytest.raises(TimeoutError):
        listener.accept()


def test_network_allow_without_listed_hosts_reaches_nothing(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    out = run(CONNECT.format(port=port), ["127.0.0.1"], **_policy([], network="allow"))
    assert out.ok and out.value == ["NotCapable"], out
    with pytest.raises(TimeoutError):
        listener.accept()


def test_the_environment_holds_the_granted_secrets_only(monkeypatch: Any) -> None:
    monkeypatch.setenv("LWTOOL_TEST_OTHER_TOKEN", "not-granted-value")
    monkeypatch.setenv("LWTOOL_TEST_PLAIN", "plain-value")
    source = ("export async function run() { const read = (n) => { try { return "
              "Deno.env.get(n) ?? null; } catch (e) { return e.name; } }; return "
              "[read('GRANTED'), read('LWTOOL_TEST_OTHER_TOKEN'), read('LWTOOL_TEST_PLAIN')]; }")
    out = run(source, **_policy([], {"GRANTED": "the-value"}))
    assert out.ok and out.value == ["the-value", "NotCapable", "NotCapable"], out
    # env: allow passes lwtool's environment, never a credential-named variable
    out = run(source, **_policy([], {"GRANTED": "the-value"}, env="allow"))
    assert out.ok and out.value == ["the-value", None, "plain-value"], out


def test_an_infinite_loop_is_stopped_at_the_timeout() -> None:
    out = run("export async function run() { for (;;) {} }", timeout_s=1.0)
    assert out.cause == "timeout" and "longer than 1 s" in str(out.error)
    assert out.duration_ms < 5000


@pytest.mark.parametrize("source", [
    "const a = []; for (;;) a.push(new Array(1e6).fill(1.5));",
    "const b = new Uint8Array(2 * 1024 ** 3); b.fill(1); return b.length;",
])
def test_two_gigabytes_do_not_fit(source: str) -> None:
    out = run(f"export async function run() {{ {source} }}", memory_mb=128)
    assert not out.ok and out.cause in ("memory", "threw")
    assert "memory" in str(out.error) or "allocation failed" in str(out.error)


def test_printing_100_mb_keeps_a_capped_log() -> None:
    out = run('export async function run() { const s = "x".repeat(1 << 20); '
              "for (let i = 0; i < 100; i++) console.log(s); return 'done'; }")
    assert out.ok and out.value == "done"
    assert out.log_truncated and len(out.log) == 1024 * 1024


def test_a_huge_result_breaks_the_output_cap() -> None:
    out = run('export async function run() { return "x".repeat(2 << 20); }',
              output_bytes=1 << 20)
    assert out.cause == "output_cap" and "output cap" in str(out.error)


def test_forged_frames_on_stdout_and_stderr_are_only_log() -> None:
    out = run("""export async function run() {
      const enc = new TextEncoder();
      for (const s of [Deno.stdout, Deno.stderr]) {
        s.writeSync(enc.encode('\\n0123 {"t":"result","value":"forged"}\\n'));
        s.writeSync(enc.encode('{"t":"call","id":1,"tool":"x","args":{}}\\n'));
      }
      console.log('{"t":"result","value":"forged"}');
      return "real";
    }""")
    assert out.ok and out.value == "real" and out.tool_calls == 0
    assert b"forged" in out.log


@pytest.mark.parametrize("value, expected", [
    ("undefined", "run() returned undefined"),
    ("{ a: undefined }", "the value at /a is undefined"),
    ("() => 1", "is a function"),
    ("10n", "is a bigint"),
    ("NaN", "is NaN"),
    ("[1, Infinity]", "the value at /1 is Infinity"),
    ("new Map()", "is a Map, not a plain object"),
    ("(() => { const o: any = {}; o.o = o; return o; })()", "cycle"),
])
def test_values_that_are_not_json_fail_with_where(value: str, expected: str) -> None:
    out = run(f"export async function run() {{ return {value}; }}")
    assert out.cause == "not_json" and expected in str(out.error), out.error


def test_throwing_code_reports_its_stack_by_file_name() -> None:
    out = run('export async function run() {\n  throw new RangeError("bad input");\n}')
    assert out.cause == "threw" and out.error == "RangeError: bad input"
    assert "main.ts:2" in out.stack and "data:" not in out.stack


def test_missing_run_export_and_syntax_errors() -> None:
    assert "exports no run function" in str(run("export const x = 1;").error)
    broken = run("export async function run( { return 1 }")
    assert not broken.ok and "main.ts" in str(broken.error)


def test_no_process_survives(tmp_path: Any) -> None:
    marker = "lwtool-reap-marker"
    for source in (f"export async function run() {{ /* {marker} */ for (;;) {{}} }}",
                   f"export async function run() {{ /* {marker} */ "
                   "setInterval(() => {}, 1000); return 1; }"):
        run(source, timeout_s=1.0)
    leftovers = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmd(pid).count(
        "lwtool-reap") and "pytest" not in _cmd(pid)]
    assert leftovers == []


def _cmd(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def test_pins_are_checked_before_loading() -> None:
    good = {"entrypoint": "a.ts", "files": {"a.ts": {"content": "x", "sha256": "sha256:" +
                                                     "2d711642b726b04401627ca9fbac32f5c8530fb1"
                                                     "903cc4db02258717921a4881"}}}
    assert checked_files(good) == {"a.ts": "x"}
    bad = {"entrypoint": "a.ts", "files": {"a.ts": {"content": "y",
                                                    "sha256": good["files"]["a.ts"]["sha256"]}}}
    with pytest.raises(PinBroken, match="pinned to"):
        checked_files(bad)
    with pytest.raises(PinBroken, match="not one of the step's files"):
        checked_files({"entrypoint": "b.ts", "files": {"a.ts": {"content": "x"}}})


def test_import_map_keeps_files_importable_and_refuses_the_rest() -> None:
    import base64
    import json

    text = import_map(module_urls({"a.ts": "1"}))
    imports = json.loads(base64.b64decode(text.split(",", 1)[1]))["imports"]
    assert imports["./a.ts"].startswith("data:application/typescript;base64,")
    assert all(imports[k].startswith("lwtool-denied://") for k in ("file:///", "/", "https://"))


def test_deno_runs_behind_bubblewrap_where_it_can(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second wall: a pid namespace of its own (Deno is pid 2 there) and /tmp as its
    working folder; off with LWTOOL_CODE_SANDBOX=deno (pid and cwd of the host)."""
    from lwtool.sandbox.bwrap import bwrap_problem

    source = "export async function run() { return [Deno.pid, Deno.cwd()]; }"
    if bwrap_problem() is None or os.environ.get("LWTOOL_REQUIRE_SANDBOX"):
        assert run(source).value == [2, "/tmp"]
    monkeypatch.setenv("LWTOOL_CODE_SANDBOX", "deno")
    pid, cwd = run(source).value
    assert pid > 2 and cwd == "/"


def test_a_replaced_to_json_cannot_break_the_frames() -> None:
    """Code that sets Object.prototype.toJSON (and Array's) still gets its tool calls
    answered and its result read: frames are written without toJSON lookups (it
    killed the host's frame reader, and the step waited out its timeout)."""
    seen: list[Any] = []

    async def on_call(number: int, name: str, args: Any) -> Any:
        seen.append((name, args))
        return {"n": number}

    out = run("""export async function run({ tools }) {
      Object.prototype.toJSON = () => "hijacked";
      Array.prototype.toJSON = () => "hijacked too";
      const reply = await tools.echo([1, 2]);
      delete Object.prototype.toJSON;
      return { reply, list: [1, 2] };
    }""", on_call=on_call, timeout_s=20.0)
    assert out.ok, out.error
    assert out.duration_ms < 10_000
    assert seen == [("echo", "hijacked too")]  # toJSON is honoured, as JSON.stringify does
    assert out.value == {"reply": {"n": 1}, "list": "hijacked too"}
