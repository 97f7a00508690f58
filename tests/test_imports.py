"""Fast paths stay fast: validate, check and lsp never import litellm."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT

PROBE = """
import sys, runpy
sys.argv = ['lwtool', *{args!r}]
try:
    runpy.run_module('lwtool', run_name='__main__')
except SystemExit:
    pass
heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('litellm', 'openai', 'jsonschema'))
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


def test_language_server_imports_no_litellm() -> None:
    code = ("import sys, lwtool.lsp.server; "
            "print('HEAVY', sorted(m for m in sys.modules if m.split('.')[0] == 'litellm'))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert "HEAVY []" in result.stdout, result.stdout + result.stderr
