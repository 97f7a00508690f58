"""Fast paths stay fast: validate, check and lsp never import litellm (nor the MCP SDK)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from lwtool.cli.extras import EXTRA_MODULES
from tests.conftest import ROOT

PROBE = """
import sys, runpy
sys.argv = ['lwtool', *{args!r}]
try:
    runpy.run_module('lwtool', run_name='__main__')
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules
               if m.split('.')[0] in ('litellm', 'openai', 'jsonschema', 'mcp'))
print('HEAVY', heavy)
"""


@pytest.mark.parametrize("args", [
    ["validate", "examples/candidate-review.lwir.yaml"],
    ["check", "examples"],
    ["hash", "examples/refine-loop.lwir.yaml"],
])
def test_fast_path_imports_no_litellm(args: list[str]) -> None:  # noqa: D103
    result = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert "HEAVY []" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("args", [
    ["validate", "examples/candidate-review.lwir.yaml"],
    ["validate", "-f", "json", "--portable", "--", "examples/refine-loop.lwir.yaml"],
    ["validate", "--format=sarif", "--check-code", "nothing-here.lwir.yaml"],
])
def test_a_plain_validate_imports_no_cli_framework(args: list[str]) -> None:
    """The console entry reads validate's plain arguments itself (issue 63, item 20)."""
    probe = (f"import sys; sys.argv = ['lwtool', *{args!r}]\n"
             "from lwtool.cli.entry import main\n"
             "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
             "print('CODE', code, 'TYPER', 'typer' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert "TYPER False" in result.stdout, result.stdout + result.stderr


def test_what_validate_does_not_read_itself_goes_to_typer() -> None:
    from lwtool.cli.validate_files import fast_argv

    assert fast_argv(["a.yaml", "-f", "json", "--portable"]) == (
        [Path("a.yaml")], "json", False, True)
    assert fast_argv(["--", "-odd.yaml"]) == ([Path("-odd.yaml")], "text", False, False)
    for args in (["--help"], ["-f", "xml", "a"], ["-f"], ["--tools", "t.py:t", "a"],
                 ["--portabl", "a"], ["-fjson", "a"], [""]):
        assert fast_argv(args) is None, args


def test_language_server_imports_no_litellm() -> None:
    code = ("import sys, lwtool.lsp.server; "
            "print('HEAVY', sorted(m for m in sys.modules if m.split('.')[0] in "
            "('litellm', 'mcp')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert "HEAVY []" in result.stdout, result.stdout + result.stderr


# A base install (`pip install lwtool`, as the pre-commit hooks do) has none of the
# `run` extra's packages: simulate it by refusing their imports.
BASE_ONLY = """
import importlib.abc, runpy, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
sys.argv = ['lwtool', *{args!r}]
runpy.run_module('lwtool', run_name='__main__')
"""


def _base_only(*args: str, blocked: frozenset[str] | None = None
               ) -> subprocess.CompletedProcess[str]:
    code = BASE_ONLY.format(blocked=sorted(blocked or EXTRA_MODULES["run"]), args=list(args))
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("args", [
    ["validate", "examples/candidate-review.lwir.yaml"],
    ["check", "examples"],
    ["canon", "examples/refine-loop.lwir.yaml"],
])
def test_validate_and_check_work_without_the_run_extra(args: list[str]) -> None:
    result = _base_only(*args)
    assert result.returncode == 0, result.stderr


def test_the_language_server_loads_without_the_run_extra() -> None:
    result = _base_only("lsp", "--help")
    assert result.returncode == 0, result.stderr


def test_run_without_the_run_extra_says_what_to_install(tmp_path: object) -> None:
    result = _base_only("run", "examples/refine-loop.lwir.yaml", "--input",
                        "examples/inputs/refine-loop.json", "--tools",
                        "examples/tools.py:tools", "--data-dir", str(tmp_path))
    assert result.returncode == 2, result.stderr
    assert "pip install 'lwtool[run]'" in result.stderr and "Traceback" not in result.stderr


def test_the_run_extra_is_what_the_cli_names() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extra = {r.split("=")[0].split("<")[0].split(">")[0].strip()
             for r in project["optional-dependencies"]["run"]}
    base = {r.split("=")[0].strip() for r in project["dependencies"]}
    assert extra == set(EXTRA_MODULES["run"]) and not extra & base


def test_export_otel_without_the_observe_extra_says_what_to_install(tmp_path: object) -> None:
    ran = subprocess.run([sys.executable, "-m", "lwtool", "run", "examples/refine-loop.lwir.yaml",
                          "--input", "examples/inputs/refine-loop.json", "--tools",
                          "examples/tools.py:tools", "--data-dir", str(tmp_path), "--run-id",
                          "r"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    result = _base_only("export-otel", "r", "--data-dir", str(tmp_path), "--file",
                        f"{tmp_path}/t.json", blocked=EXTRA_MODULES["observe"])
    assert result.returncode == 2, result.stderr
    assert "pip install 'lwtool[observe]'" in result.stderr and "Traceback" not in result.stderr


def test_the_observe_extra_is_what_the_cli_names() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extra = {r.split("=")[0].split("-")[0].strip()
             for r in project["optional-dependencies"]["observe"]}
    assert extra | {"google"} == set(EXTRA_MODULES["observe"]) | {"jinja2"}


@pytest.mark.parametrize("args", [
    ["migrate", "--world", "postgresql://127.0.0.1:1/none"],
    ["workers", "--world", "postgresql://127.0.0.1:1/none"],
    ["worker", "--world", "postgresql://127.0.0.1:1/none"],
    ["runs", "--world", "postgresql://127.0.0.1:1/none"],
])
def test_postgres_commands_without_the_postgres_extra_say_what_to_install(
        args: list[str]) -> None:
    result = _base_only(*args, blocked=EXTRA_MODULES["postgres"])
    assert result.returncode == 2, result.stderr
    assert "pip install 'lwtool[postgres]'" in result.stderr, result.stderr
    assert ".venv/bin/pip install -e '.[postgres]'" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_a_servers_file_without_the_mcp_extra_says_what_to_install_at_once(
        tmp_path: Path) -> None:
    (tmp_path / "servers.json").write_text(
        '{"mcpServers": {"time": {"command": "sh", "args": ["-c", "sleep 60"]}}}')
    started = time.monotonic()
    result = _base_only("run", "examples/refine-loop.lwir.yaml", "--input",
                        "examples/inputs/refine-loop.json", "--tools",
                        str(tmp_path / "servers.json"), "--data-dir", str(tmp_path / "d"),
                        blocked=EXTRA_MODULES["mcp"])
    assert time.monotonic() - started < 20
    assert result.returncode == 2, result.stderr
    assert "pip install 'lwtool[mcp]'" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_each_extra_is_what_the_cli_names() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for extra in ("postgres", "mcp"):
        packages = {r.split("=")[0].split("[")[0].replace("-", "_").strip()
                    for r in project["optional-dependencies"][extra]}
        assert packages <= set(EXTRA_MODULES[extra]), (extra, packages)


RUN_PROBE = """
import sys, runpy
sys.argv = ['lwtool', *{args!r}]
try:
    runpy.run_module('lwtool', run_name='__main__')
except SystemExit as exc:
    print('EXIT', exc.code)
print('LOADED', sorted(m for m in sys.modules if m in {modules!r}))
"""


def test_a_plain_lwir_run_does_not_load_the_agent_workspace(tmp_path: object) -> None:
    """The workspace (bash, memory stores mounted, skills) belongs to a definition's
    worker and to agent sessions: `lwtool run` of an LWIR file never imports it (its
    scratch is removed through lwtool.harness.scratch), nor the code.run sandbox's
    process confinement (ctypes) when no step runs code."""
    modules = ["lwtool.harness.workspace", "lwtool.harness.bash", "lwtool.harness.skills",
               "lwtool.harness.stores", "lwtool.sandbox.confine", "ctypes", "mcp"]
    args = ["run", "examples/refine-loop.lwir.yaml", "--input",
            "examples/inputs/refine-loop.json", "--tools", "examples/tools.py:tools",
            "--data-dir", str(tmp_path), "--quiet"]
    result = subprocess.run([sys.executable, "-c", RUN_PROBE.format(args=args, modules=modules)],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "EXIT 0" in result.stdout or "EXIT None" in result.stdout, result.stderr
    assert "LOADED []" in result.stdout, result.stdout
