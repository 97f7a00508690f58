"""One import direction: every import in lwtool/ (lazy ones inside functions and
TYPE_CHECKING ones too) points down the ladder below, never up and never sideways to
another folder on the same rung, and no two modules import each other in a circle.

The ladder is the package's architecture (README "Layout"); a new folder or top-level
module must be placed on it before its imports can pass."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from lwtool.validate.graph import strongly_connected
from tests.conftest import ROOT

# Top to bottom. A folder (or top-level module) may import only from rungs below its own.
LADDER: list[tuple[str, ...]] = [
    ("__init__",),  # the public API, re-exported lazily
    ("__main__",),  # `python -m lwtool`
    ("cli",),  # the command line
    ("lsp", "ui"),  # the language server; the web inspector
    ("orchestrate",),  # pipelines: the orchestrator session, its tools, sub-runs
    ("planner",),  # plan -> validate -> lock sessions, the outer loop, the run API
    ("runtime",),  # the scheduler: start/resume, scopes, dispatch, parallel, drift
    ("harness",),  # the roles: workflow harness, sessions, fixer, bash, skills
    ("mcp",),  # tools from MCP servers (the `mcp` SDK): servers file, hub, registry
    ("steps",),  # the step executors: tool.call, ai.generate, decision, code.run
    ("calls",),  # recorded model and tool calls: litellm, scripted, offline; agent loop
    ("coderun",),  # code.run in Deno: policy, runner, pinned sources, type check
    ("sandbox",),  # process walls: bubblewrap, parent-death and pid namespaces, limits
    ("lock",),  # lock files and their drift
    ("compile", "graph"),  # load + validate + hash one file; a workflow's graph
    ("validate",),  # the rules and their findings
    ("authoring",),  # the generator API and definition snapshots
    ("observe",),  # seeing runs: timeline, OpenTelemetry, live progress
    ("record",),  # the durable record of a run: run state, journal, ids, errors, usage
    ("world",),  # where runs live: events, artifacts, locks
    ("expr", "source"),  # expressions; documents with positions, pointers, findings
    ("canonical", "tools", "_resources", "_version"),  # RFC 8785; tool registry; data
    ("capability",),  # host patterns and secrets: the firewall's pure parts
]
RUNG = {part: index for index, rung in enumerate(LADDER) for part in rung}


def _modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of `package`."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _part(module: str) -> str:
    """The ladder entry of a dotted module: its folder, or the top-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path, module: str, modules: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """(line, imported lwtool module) for every import statement in the file."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from lwtool import graph` imports the module graph, not the package
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                     for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                yield node.lineno, name


def ladder_problems(package: Path) -> list[str]:
    """Imports that point up or sideways, modules not on the ladder, and circles."""
    modules = _modules(package)
    problems: list[str] = []
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for module, path in modules.items():
        source = _part(module)
        if source not in RUNG:
            problems.append(f"{path}: '{source}' is not on the ladder (tests/test_layers.py)")
            continue
        for line, target in _imports(path, module, modules):
            if target != module:
                edges[module].add(target)
            part = _part(target)
            if part == source or part not in RUNG:
                continue
            if RUNG[part] <= RUNG[source]:
                where = "up" if RUNG[part] < RUNG[source] else "sideways"
                problems.append(f"{path}:{line}: {module} imports {target} ({where}: "
                                f"{source} may import only from rungs below its own)")
    problems += [f"import circle: {' -> '.join(circle)}" for circle in _circles(edges)]
    return problems


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module."""
    components = strongly_connected(sorted(edges), {k: sorted(v) for k, v in edges.items()})
    return [sorted(component) for component in components if len(component) > 1]


def test_every_import_points_down_the_ladder() -> None:
    assert ladder_problems(ROOT / "lwtool") == []


def test_every_rung_exists() -> None:
    """A ladder entry that names nothing is a stale architecture description."""
    package = ROOT / "lwtool"
    present = {_part(name) for name in _modules(package)}
    assert sorted(set(RUNG) - present) == []


def _fake_package(root: Path, files: dict[str, str]) -> Path:
    package = root / "lwtool"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


@pytest.mark.parametrize(("files", "expected"), [
    ({"harness/__init__.py": "", "runtime/__init__.py": "",
      "harness/agent.py": "def f():\n    from lwtool.runtime.scope import Scope\n",
      "runtime/scope.py": ""},
     r"harness/agent\.py:2: lwtool\.harness\.agent imports lwtool\.runtime\.scope \(up"),
    ({"expr/__init__.py": "", "source/__init__.py": "",
      "source/loader.py": "from lwtool.expr import parser\n", "expr/parser.py": ""},
     r"source/loader\.py:1: .* imports lwtool\.expr\.parser \(sideways"),
    ({"world/__init__.py": "", "world/a.py": "from . import b\n",
      "world/b.py": "from lwtool.world import a\n"},
     r"import circle: lwtool\.world\.a -> lwtool\.world\.b"),
    ({"newfolder/__init__.py": "", "newfolder/x.py": ""},
     r"'newfolder' is not on the ladder"),
])
def test_the_check_reports_each_kind_of_problem(tmp_path: Path, files: dict[str, str],
                                                expected: str) -> None:
    problems = ladder_problems(_fake_package(tmp_path, files))
    assert any(re.search(expected, problem) for problem in problems), problems


def test_downward_and_same_folder_imports_pass(tmp_path: Path) -> None:
    package = _fake_package(tmp_path, {
        "runtime/__init__.py": "", "harness/__init__.py": "",
        "runtime/scope.py": "from lwtool.harness import agent\nfrom . import dispatch\n",
        "runtime/dispatch.py": "", "harness/agent.py": "from lwtool._version import v\n",
        "_version.py": "v = 1\n"})
    assert ladder_problems(package) == []


def test_the_readme_names_each_folders_job() -> None:
    """README "Layout" lists every folder of the ladder with its one-line job."""
    readme = (ROOT / "README.md").read_text()
    layout = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    folders = [part for part in RUNG if (ROOT / "lwtool" / part).is_dir()]
    missing = [part for part in folders if not re.search(rf"`{part}/`", layout)]
    assert missing == []
