"""`lwtool graph`'s Mermaid as Mermaid itself reads it: mermaid.js (npm, pinned in
tests/clients/package.json; GitHub renders Markdown diagrams with it) renders each
example, with and without a run's statuses, in headless Chromium."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

MERMAID = Path(__file__).parent / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
EXAMPLES = ["candidate-review.lwir.yaml", "refine-loop.lwir.yaml", "filter-candidates.lwir.json"]
RENDER = """async (text) => {
  mermaid.initialize({startOnLoad: false, securityLevel: "strict"});
  try {
    const {svg} = await mermaid.render("graph" + Math.floor(Math.random() * 1e9), text);
    return {svg};
  } catch (error) {
    return {error: String(error && error.message || error)};
  }
}"""


@pytest.fixture(scope="module")
def mermaid_page(browser: Any) -> Any:
    if not MERMAID.exists():
        pytest.fail(f"{MERMAID} is missing: run `npm ci --prefix tests/clients` "
                    "(scripts/bootstrap.sh does where npm is present)")
    page = browser.new_page()
    page.set_content("<!doctype html><html><body></body></html>")
    page.add_script_tag(path=str(MERMAID))
    yield page
    page.close()


def _render(page: Any, text: str) -> dict[str, str]:
    result: dict[str, str] = page.evaluate(RENDER, text)
    return result


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_example_renders_in_mermaid(mermaid_page: Any, name: str) -> None:
    text = run_cli("graph", f"examples/{name}").stdout
    drawn = _render(mermaid_page, text)
    assert "error" not in drawn, drawn.get("error")
    steps = len(re.findall(r"^\s+s\d+[\[\{(]", text, re.M))
    assert drawn["svg"].count('class="node') >= steps > 0


def test_statuses_of_a_run_render_in_mermaid(mermaid_page: Any, tmp_path: Path) -> None:
    ran = run_cli("run", "examples/refine-loop.lwir.yaml", "--input",
                  "examples/inputs/refine-loop.json", "--tools", "examples/tools.py:tools",
                  "--data-dir", str(tmp_path), "--run-id", "loop")
    assert ran.returncode == 0, ran.stderr
    text = run_cli("graph", "examples/refine-loop.lwir.yaml", "--run", "loop", "--data-dir",
                   str(tmp_path)).stdout
    assert "classDef done" in text
    drawn = _render(mermaid_page, text)
    assert "error" not in drawn, drawn.get("error")
    assert "done ×3" in drawn["svg"]


def test_text_mermaid_cannot_read_is_refused(mermaid_page: Any) -> None:
    drawn = _render(mermaid_page, "flowchart TD\n  a[\"unclosed --> b\n")
    assert "error" in drawn


def test_a_pipeline_and_its_sub_runs_render_in_mermaid(mermaid_page: Any,
                                                       tmp_path: Path) -> None:
    """`lwtool graph PIPELINE --run RUN`: the pipeline, its workflows and the run's
    sub-runs under them, coloured by status (the offline orchestrator runs three)."""
    pipeline = "examples/pipeline/numbers.pipeline.yaml"
    ran = run_cli("orchestrate", pipeline, "-i", "examples/pipeline/input.json", "--offline",
                  "--tools", "examples/pipeline/tools.py:tools", "--data-dir", str(tmp_path),
                  "--run-id", "p", "-q")
    assert ran.returncode == 0, ran.stderr
    text = run_cli("graph", pipeline, "--run", "p", "--data-dir", str(tmp_path)).stdout
    assert text.count("w0 -.-> r") == 3 and "class r0,r1,r2 done" in text, text
    drawn = _render(mermaid_page, text)
    assert "error" not in drawn, drawn.get("error")
    assert "p.sub.1.2" in drawn["svg"] and drawn["svg"].count('class="node') >= 5
    dot = run_cli("graph", pipeline, "--format", "dot").stdout
    assert dot.startswith("digraph pipeline {") and "p -> w0;" in dot
