"""Generate large LWIR documents for benchmarks (a chain of tool.call and ai.generate steps)."""

from __future__ import annotations

from typing import Any


def chain_lwir(steps: int, uses: str = "mixed") -> dict[str, Any]:
    """An LWIR workflow of `steps` steps, each reading the previous one's output."""
    body: list[dict[str, Any]] = []
    for i in range(steps):
        step: dict[str, Any] = {"id": f"s{i}"}
        kind = ("tool.call" if i % 2 == 0 else "ai.generate") if uses == "mixed" else uses
        if kind == "tool.call":
            step.update(uses="tool.call", with_={"tool": "echo"},
                        input={"value": f"{{{{ steps.s{i - 1}.output.value }}}}" if i else
                               "{{ input.seed }}", "n": i},
                        output={"mode": "object", "schema": {
                            "type": "object", "required": ["value"],
                            "properties": {"value": {"type": "string"}}}})
        else:
            step.update(uses="ai.generate", with_={
                "model": "offline", "system": "You are step number " + str(i),
                "prompt": f"Rewrite {{{{ steps.s{i - 1}.output.value }}}} briefly."},
                output={"mode": "object", "schema": {
                    "type": "object", "required": ["value"],
                    "properties": {"value": {"type": "string", "minLength": 1}}}})
        if i:
            step["needs"] = [f"s{i - 1}"]
        step["with"] = step.pop("with_")
        body.append(step)
    return {
        "apiVersion": "littleworkflow.dev/v0.1",
        "kind": "Workflow",
        "metadata": {"name": f"chain-{steps}", "version": "0.1.0"},
        "input": {"schema": {"type": "object", "required": ["seed"],
                             "properties": {"seed": {"type": "string"}}}},
        "output": {"schema": {"type": "object"}},
        "permissions": {"tools": ["echo"], "models": ["offline"], "secrets": [], "network": []},
        "steps": body,
    }


def to_yaml(doc: dict[str, Any]) -> str:
    import io

    from ruamel.yaml import YAML

    out = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.dump(doc, out)
    return out.getvalue()
