"""The inspector in a real browser: `lwtool ui` as a user starts it, driven in headless
Chromium (Debian's, through Playwright; no browser download; the `browser`
fixture is tests/conftest.py's). Screenshots of each page
go to $LWTOOL_UI_SCREENSHOTS, else to a `ui-screenshots` folder under pytest's tmp."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.ui.conftest import UI_TOOLS

HERE = Path(__file__).parent
@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = os.environ.get("LWTOOL_UI_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("ui-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def start_inspector(data_dir: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """`lwtool ui --port 0` and the URL it says it serves."""
    proc = subprocess.Popen([sys.executable, "-m", "lwtool", "ui", "--data-dir",
                             str(data_dir), "--port", "0", *extra], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"inspector at (http://127\.0\.0\.1:\d+/)", line)
    assert found, line + (proc.stderr.read() if proc.poll() is not None else "")
    return proc, found.group(1)


@pytest.fixture()
def inspector(demo_dir: Path) -> Iterator[str]:
    proc, url = start_inspector(demo_dir)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_runs_to_run_to_step_to_artifact(browser: Any, inspector: str,
                                         screenshots: Path) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(inspector)
    assert page.title() == "Runs · lwtool"
    page.screenshot(path=str(screenshots / "runs.png"), full_page=True)
    page.get_by_role("link", name="demo-review", exact=True).click()
    page.wait_for_url(re.compile(r"/runs/demo-review$"))
    nodes = page.locator("svg.graph g.node")
    assert nodes.count() == 4
    assert set(nodes.evaluate_all("ns => ns.map(n => n.dataset.status)")) == {"done"}
    box = page.locator("svg.graph").bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 100
    assert page.locator(".timeline .lane").count() == 4
    assert page.locator("#run-status").inner_text() == "completed"
    page.screenshot(path=str(screenshots / "run.png"), full_page=True)
    page.locator('svg.graph g.node[data-pointer="/steps/0/steps/0"] a').click()
    page.wait_for_url(re.compile(r"/runs/demo-review/step\?path=review-cands"))
    assert "worker.visit[0]" in page.locator("h1").inner_text()
    assert page.get_by_text("You assess candidates against a job requirement").count() >= 1
    page.screenshot(path=str(screenshots / "step.png"), full_page=True)
    page.locator("ul.artifacts a").first.click()
    page.wait_for_url(re.compile(r"/artifacts/sha256/[0-9a-f]{64}$"))
    assert "checked against its address" in page.locator("main").inner_text()
    page.screenshot(path=str(screenshots / "artifact.png"), full_page=True)
    page.go_back()
    page.go_back()
    page.locator("dd a.mono").first.click()
    page.wait_for_url(re.compile(r"/versions/sha256:"))
    assert page.locator(".badge.completed", has_text="matches").count() == 1
    page.screenshot(path=str(screenshots / "version.png"), full_page=True)
    page.close()


def test_a_running_run_is_followed_until_it_completes(browser: Any, inspector: str,
                                                      demo_dir: Path, screenshots: Path
                                                      ) -> None:
    run = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", str(HERE / "slow.lwir.yaml"), "--input", "-",
         "--tools", UI_TOOLS, "--data-dir", str(demo_dir), "--run-id", "live"], cwd=ROOT,
        text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "LWTOOL_UI_SLEEP": "0.8"})
    assert run.stdin is not None
    run.stdin.write("{}")
    run.stdin.close()
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        deadline = time.monotonic() + 60
        while True:  # the run page exists once the run has started
            reply = page.goto(f"{inspector}runs/live")
            if reply is not None and reply.status == 200:
                break
            assert time.monotonic() < deadline and run.poll() is None, "the run never started"
            time.sleep(0.1)
        assert page.locator("#run-status").inner_text() == "running"
        page.evaluate("window.__notReloaded = true")
        page.screenshot(path=str(screenshots / "run-live.png"), full_page=True)
        # a selector, not a script: the page's CSP forbids evaluating strings
        page.wait_for_selector("#run-status.completed", timeout=60_000)
        assert page.evaluate("window.__notReloaded") is True  # updated in place
        statuses = page.locator("svg.graph g.node").evaluate_all(
            "ns => ns.map(n => n.dataset.status)")
        assert statuses == ["done"] * 4
        assert page.locator("#steps-done").inner_text() == "4"
        page.screenshot(path=str(screenshots / "run-live-done.png"), full_page=True)
    finally:
        page.close()
        assert run.wait(timeout=60) == 0, run.stderr.read() if run.stderr else ""
