"""The VS Code extension's first diagnostic, in a real VS Code host (code-server 4.100,
VS Code 1.100, in Debian's Chromium: tests/clients/vscode_host.py), and where the time
goes. A user opens the workspace's first LWIR file (a) as soon as the window shows its
Explorer and (b) once the window has settled (the extension host up). Each round
prints the time from the click on the file to the error count in the status bar, and
its parts, read from the extension host's log (its start, the extension's activation)
and from a wrapper around `lwtool lsp` that stamps the server's spawn, its `initialize`
answer, the first `didOpen` and the first `publishDiagnostics` (the wrapper's own
Python start-up, tens of milliseconds, is counted in the server's start-up). Goal: at most 1 s
from opening the file. Medians of --rounds (default 3) fresh code-server hosts.

Run: .venv/bin/python bench/vscode.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from tests.clients.documents import BROKEN  # noqa: E402
from tests.clients.vscode_host import LWTOOL, open_file, pack_vsix, serve, workbench  # noqa: E402
from tests.conftest import CHROMIUM_ARGS  # noqa: E402

# Between the editor and `lwtool lsp`: stamps (seconds since the epoch) of the spawn and
# of the first message of each kind that matters, in a file beside the workspace.
STAMPS = '''\
import os, re, subprocess, sys, threading, time
out = open(os.environ["STAMPS"], "a")
def stamp(what):
    out.write(f"{what} {time.time():.4f}\\n"); out.flush()
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
seen = set()
def pump(src, dst, kinds):
    while chunk := os.read(src.fileno(), 65536):
        dst.write(chunk); dst.flush()
        for kind, mark in kinds:
            if kind not in seen and mark in chunk:
                seen.add(kind); stamp(kind)
threading.Thread(target=pump, daemon=True, args=(sys.stdin.buffer, child.stdin,
                 [("didOpen", b'"textDocument/didOpen"')])).start()
pump(child.stdout, sys.stdout.buffer, [("initialized", b'"capabilities"'),
     ("published", b'"textDocument/publishDiagnostics"')])
sys.exit(child.wait())
'''
_LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})")


def log_stamp(logs: Path, needle: str) -> float | None:
    """When the extension host's log first says `needle` (seconds since the epoch)."""
    for log in sorted(logs.rglob("*exthost.log")):
        for line in log.read_text().splitlines():
            found = _LOG_TIME.match(line)
            if needle in line and found:
                return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S.%f").timestamp()
    return None


def one_round(browser: object, vsix: Path, settle: float) -> dict[str, float]:
    """One fresh host: the user opens the file `settle` seconds after the Explorer shows."""
    with tempfile.TemporaryDirectory() as tmp, serve(Path(tmp), vsix, trust=False) as host:
        workspace: Path = host["workspace"]
        stamps = workspace.parent / "stamps"
        wrapper = workspace.parent / "lwtool-lsp"
        (workspace.parent / "stamps.py").write_text(STAMPS)
        # the spawn stamped by the shell, before the stamping Python starts (its start-up
        # is counted in the server's)
        wrapper.write_text(f"#!/bin/sh\necho spawn $(date +%s.%N) >> {stamps}\n"
                           f"STAMPS={stamps} exec {sys.executable} "
                           f"{workspace.parent / 'stamps.py'} {LWTOOL} \"$@\"\n")
        wrapper.chmod(0o755)
        host["settings"].write_text(json.dumps({"lwtool.command": [str(wrapper), "lsp"]}))
        (workspace / "flow.workflow.yaml").write_text(BROKEN)
        page = workbench(browser, host["url"])
        try:
            page.wait_for_timeout(int(settle * 1000))
            clicked = time.time()
            open_file(page, "flow.workflow.yaml")
            while "Errors: 1" not in (page.get_attribute("#status\\.problems",
                                                         "aria-label") or ""):
                if time.time() - clicked > 60:
                    raise SystemExit("no diagnostic within 60 s")
                page.wait_for_timeout(10)
            shown = time.time()
        finally:
            page.close()
        server = dict(line.split() for line in stamps.read_text().splitlines())
        started = log_stamp(host["logs"], "Extension host with pid")
        activated = log_stamp(host["logs"], "_doActivateExtension lwtool.lwtool-lwir")
        assert started is not None and activated is not None, "no extension host log"
        marks = [("extension host start", started), ("activation", activated),
                 ("server spawn", float(server["spawn"])),
                 ("initialize answered", float(server["initialized"])),
                 ("didOpen", float(server["didOpen"])),
                 ("diagnostics sent", float(server["published"])), ("shown", shown)]
        # each part counted from the click on: what happened before it cost the user nothing
        parts = {"click to diagnostic shown": shown - clicked}
        previous = ("click", clicked)
        for name, at in marks:
            parts[f"{previous[0]} to {name}"] = max(0.0, at - max(previous[1], clicked))
            previous = (name, at)
        return parts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("bench/vscode.py needs Debian's chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        vsix = pack_vsix(Path(tmp) / "lwtool-lwir.vsix")
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for label, settle in (("opened as soon as the Explorer shows", 0.0),
                              ("opened once the window settled (4 s)", 4.0)):
            samples = [one_round(browser, vsix, settle) for _ in range(rounds)]
            print(f"first file {label} (median of {rounds} hosts):")
            for part in samples[0]:
                value = statistics.median(s[part] for s in samples)
                goal = "  (goal <= 1 s)" if part.startswith("click to diag") else ""
                print(f"  {part:<40} {value:6.2f} s{goal}")
        browser.close()


if __name__ == "__main__":
    main()
