import time, json
from pathlib import Path
from typing import Any
from tests.clients.test_vscode import vsix, host, _workbench, _open_file, LWTOOL  # noqa
from tests.clients.documents import BROKEN

WRAP = """#!/bin/sh
echo "spawn $(date +%s.%N)" >> {log}
exec {lwtool} "$@"
"""

def test_probe(browser: Any, host: dict) -> None:
    ws: Path = host["workspace"]
    log = ws.parent / "spawn.log"
    wrapper = ws.parent / "wrap.sh"
    wrapper.write_text(WRAP.format(log=log, lwtool=LWTOOL)); wrapper.chmod(0o755)
    host["settings"].write_text(json.dumps({"lwtool.command": [str(wrapper), "lsp"]}))
    (ws / "flow.workflow.yaml").write_text(BROKEN)
    t_page = time.time()
    page = _workbench(browser, host["url"])
    t_ready = time.time()
    _open_file(page, "flow.workflow.yaml")
    t_open = time.time()
    while True:
        label = page.get_attribute("#status\\.problems", "aria-label") or ""
        if "Errors: 1" in label or "1 Error" in label:
            break
        if time.time() - t_open > 30:
            raise AssertionError(label)
        page.wait_for_timeout(20)
    t_diag = time.time()
    spawn = float(log.read_text().split()[1]) if log.exists() else None
    print(f"\nPROBE page->ready {t_ready-t_page:.2f}s open-click->tab {t_open-t_ready:.2f}s tab->diag {t_diag-t_open:.2f}s  click->diag {t_diag-t_ready:.2f}s spawn-after-ready {spawn - t_ready if spawn else None}")
