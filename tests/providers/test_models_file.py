"""A models file entry that says where its model is served (`apiBase`), which
environment variable holds its key (`apiKeyEnv`) and what more litellm needs
(`options`): used by `lwtool run`, the key sent to the provider and never written to the
data dir, the report or an OTel export; an unset variable fails the call in one line;
an entry lwtool cannot use is refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import run_cli
from tests.fixtures.provider_servers import provider_server

SECRET = "sk-lwtool-test-secret-77ab"
MODEL = "anthropic/claude-haiku-4-5-20251001"
FLOW = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: wire}
permissions: {models: [m]}
steps:
  - {id: say, uses: ai.generate, with: {model: m, prompt: "About {{ input.text }}"}}
"""
pytestmark = pytest.mark.slow


def _files(folder: Path, entry: dict[str, object]) -> None:
    (folder / "flow.lwir.yaml").write_text(FLOW)
    (folder / "in.json").write_text('{"text": "a ticket"}')
    (folder / "models.yaml").write_text(yaml.safe_dump({"m": entry}))


def test_the_key_reaches_the_provider_and_nothing_lwtool_writes(tmp_path: Path) -> None:
    with provider_server("anthropic", ["Billing trouble."]) as server:
        _files(tmp_path, {"model": MODEL, "apiBase": server.api_base,
                          "apiKeyEnv": "LWTOOL_TEST_KEY",
                          "options": {"extra_headers": {"X-Team": "qa"}}})
        args = ["--models", "models.yaml", "--data-dir", "d"]
        done = run_cli("run", "flow.lwir.yaml", "-i", "in.json", "--run-id", "r", "--json",
                       *args, cwd=tmp_path, env={"LWTOOL_TEST_KEY": SECRET})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["output"] == "Billing trouble."
        headers = server.requests[0]["headers"]
        assert headers["x-api-key"] == SECRET and headers["x-team"] == "qa"
        unset = run_cli("run", "flow.lwir.yaml", "-i", "in.json", "--run-id", "u", *args,
                        cwd=tmp_path)
        assert unset.returncode == 1 and len(server.requests) == 1
        assert ("no API key (set LWTOOL_TEST_KEY, the models file's apiKeyEnv)"
                in unset.stderr), unset.stderr
    report = run_cli("report", "r", "--json", "--data-dir", "d", cwd=tmp_path)
    assert report.returncode == 0 and json.loads(report.stdout)["run"]["costUsd"] > 0
    otel = run_cli("export-otel", "r", "--file", "trace.json", "--data-dir", "d",
                   cwd=tmp_path)
    assert otel.returncode == 0, otel.stderr
    events = run_cli("events", "r", "--json", "--data-dir", "d", cwd=tmp_path)
    for text in (report.stdout, events.stdout, done.stdout, done.stderr,
                 (tmp_path / "trace.json").read_text()):
        assert SECRET not in text
    for path in (tmp_path / "d").rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(("entry", "said"), [
    ({"model": MODEL, "apiBase": "ftp://example.com"}, "apiBase must be an http:// or "
     "https:// URL"),
    ({"model": MODEL, "apiKeyEnv": "sk-live-123"}, "apiKeyEnv names an environment "
     "variable (the key itself is never written in the file)"),
    ({"model": MODEL, "options": {"api_key": "x"}}, "options may not set api_key"),
    ({"model": MODEL, "structuredOutput": "yes"}, "structuredOutput is native or json"),
    ({"model": MODEL, "apiBas": "http://x"}, "unknown key 'apiBas' (did you mean 'apiBase'?)"),
])
def test_an_entry_lwtool_cannot_use_is_refused_before_anything_runs(
        tmp_path: Path, entry: dict[str, object], said: str) -> None:
    _files(tmp_path, entry)
    refused = run_cli("run", "flow.lwir.yaml", "-i", "in.json", "--models", "models.yaml",
                      "--data-dir", "d", cwd=tmp_path)
    assert refused.returncode == 2 and said in refused.stderr, refused.stderr
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize(("api", "entry_key", "env"), [
    # no apiKeyEnv: litellm reads the provider's standard variable itself
    ("openai", None, {"OPENAI_API_KEY": SECRET}),
    ("anthropic", "LWTOOL_TEST_KEY", {"LWTOOL_TEST_KEY": SECRET}),
])
def test_a_key_a_provider_quotes_in_its_error_reaches_nothing_lwtool_writes(
        tmp_path: Path, api: str, entry_key: str | None, env: dict[str, str]) -> None:
    model = "openai/gpt-4o-mini" if api == "openai" else MODEL
    with provider_server(api, [{"error": 401, "kind": "echo_key"}]) as server:
        entry: dict[str, object] = {"model": model, "apiBase": server.api_base}
        if entry_key:
            entry["apiKeyEnv"] = entry_key
        _files(tmp_path, entry)
        args = ["--models", "models.yaml", "--data-dir", "d"]
        done = run_cli("run", "flow.lwir.yaml", "-i", "in.json", "--run-id", "r", "--json",
                       *args, cwd=tmp_path, env=env)
        assert done.returncode == 1, done.stderr
        assert len(server.requests) == 1
    events = run_cli("events", "r", "--json", "--data-dir", "d", cwd=tmp_path)
    assert "Incorrect API key provided" in events.stdout  # the provider's words stay
    report = run_cli("report", "r", "--json", "--data-dir", "d", cwd=tmp_path)
    run_cli("export-otel", "r", "--file", "trace.json", "--data-dir", "d", cwd=tmp_path)
    for text in (report.stdout, events.stdout, done.stdout, done.stderr,
                 (tmp_path / "trace.json").read_text()):
        assert SECRET not in text and SECRET[:12] not in text
    for path in (tmp_path / "d").rglob("*"):
        assert not path.is_file() or SECRET[:12].encode() not in path.read_bytes(), path
