"""Budgets: `--max-tokens` / `--max-cost-usd` (and a definition's `runtime.budget`).
Before each new model call the run's committed usage is held against the budget; once
spent, no call starts and the run fails with budget_exceeded naming what was spent. A
reply without a price makes a cost budget unknowable: no further call, and it says so.
The budget is the run's: a resume keeps it; `replay --max-tokens` can raise it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.fixtures.openai_server import fixture_server

CHAIN = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: three-calls}
permissions: {models: [writer]}
steps:
  - {id: a, uses: ai.generate, with: {model: writer, prompt: "one"}}
  - {id: b, uses: ai.generate, needs: [a], with: {model: writer, prompt: "two"}}
  - {id: c, uses: ai.generate, needs: [b], with: {model: writer, prompt: "three"}}
"""


def _setup(tmp_path: Path, model: str) -> None:
    (tmp_path / "wf.lwir.yaml").write_text(CHAIN)
    (tmp_path / "models.yaml").write_text(f"writer: {model}\n")
    (tmp_path / "in.json").write_text("{}")


def _run(tmp_path: Path, server: object, *args: str) -> object:
    env = {"OPENAI_API_BASE": server.base_url, "OPENAI_BASE_URL": server.base_url,  # type: ignore
           "OPENAI_API_KEY": "sk-fixture"}
    return run_cli(*args, "--data-dir", "data", "--json", cwd=tmp_path, env=env)


def test_a_token_budget_stops_the_next_call_and_replay_can_raise_it(tmp_path: Path) -> None:
    _setup(tmp_path, "openai/gpt-4o-mini")
    with fixture_server(["A", "B", "C", "D"]) as server:  # each reply: 11 + 7 tokens
        failed = _run(tmp_path, server, "run", "wf.lwir.yaml", "-i", "in.json",
                      "--models", "models.yaml", "--run-id", "r1", "--max-tokens", "30")
        assert failed.returncode == 1  # type: ignore[attr-defined]
        result = json.loads(failed.stdout)  # type: ignore[attr-defined]
        assert (result["causeCode"], result["failedStepPath"]) == ("budget_exceeded", "c")
        assert result["message"] == ("no model call started: the token budget is spent: "
                                     "36 tokens used of 30 (--max-tokens)")
        assert len(server.requests) == 2  # a, b answered; c never asked
        raised = _run(tmp_path, server, "retry", "r1", "--max-tokens", "1000")
        assert raised.returncode == 0, raised.stderr  # type: ignore[attr-defined]
        assert len(server.requests) == 3  # only c: a and b came from the log


def test_a_cost_budget_counts_priced_replies(tmp_path: Path) -> None:
    _setup(tmp_path, "openai/gpt-4o-mini")
    with fixture_server(["A", "B", "C"]) as server:
        done = _run(tmp_path, server, "run", "wf.lwir.yaml", "-i", "in.json",
                    "--models", "models.yaml", "--max-cost-usd", "0.000001")
        assert done.returncode == 1  # type: ignore[attr-defined]
        message = json.loads(done.stdout)["message"]  # type: ignore[attr-defined]
        assert message.startswith("no model call started: the cost budget is spent: $0.0000")
        assert "of $0.000001 (--max-cost-usd)" in message
        assert len(server.requests) == 1  # the first reply already cost more


def test_an_unpriced_reply_makes_a_cost_budget_unknowable(tmp_path: Path) -> None:
    _setup(tmp_path, "openai/lwtool-test-unpriced-model")
    with fixture_server(["A", "B", "C"]) as server:
        done = _run(tmp_path, server, "run", "wf.lwir.yaml", "-i", "in.json",
                    "--models", "models.yaml", "--max-cost-usd", "5")
        assert done.returncode == 1  # type: ignore[attr-defined]
        message = json.loads(done.stdout)["message"]  # type: ignore[attr-defined]
        assert "the cost budget ($5.000000) cannot be held: 1 reply(ies) have no price " \
               "(openai/lwtool-test-unpriced-model)" in message
        assert len(server.requests) == 1


def test_a_definition_budget_and_the_offline_model(tmp_path: Path) -> None:
    (tmp_path / "wf.lwir.yaml").write_text(CHAIN)
    (tmp_path / "d.definition.yaml").write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\nid: d\n"
        "models: [{id: writer, model: offline}]\nplanner: {plan: wf.lwir.yaml}\n"
        "runtime: {budget: {maxTokens: 3, maxCostUsd: 1}}\n")
    (tmp_path / "in.json").write_text("{}")
    assert run_cli("validate", "d.definition.yaml", cwd=tmp_path).returncode == 0
    done = run_cli("run", "d.definition.yaml", "-i", "in.json", "--data-dir", "data",
                   "--json", cwd=tmp_path)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["causeCode"] == "budget_exceeded"  # tokens; offline replies cost nothing
    assert "token budget is spent" in result["message"]
    wider = run_cli("run", "d.definition.yaml", "-i", "in.json", "--data-dir", "data2",
                    "--json", "--max-tokens", "100000", cwd=tmp_path)
    assert wider.returncode == 0, wider.stderr  # the flag wins over the definition's
