"""The Python generator API: build LWIR workflows and WorkflowDefinitions in Python and
emit the very files the CLI reads (`lwtool generate MODULE:ATTR -o FILE`).

    wf = workflow("loan-summary", input=Applicant, output=str)
    credit = wf.tool_call("credit", "creditScore", args={"applicant": "{{ input.applicant }}"})
    wf.ai_generate("summarize", model="gpt-4o-mini", needs=[credit],
                   prompt="Summarize. Score: {{ steps.credit.output.score }}")

`permissions` are derived from the tools and model slots the steps use and the secrets
they are granted (a step's `secrets=[...]`; each list sorted by name), plus the hosts
the workflow's `network=[...]` names; code.run steps read their source from a file and
pin its sha256; schemas may be pydantic models. A step takes `sensitive=True` too.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lwtool.authoring.schemas import to_schema

API_VERSION = "littleworkflow.dev/v0.1"
Needs = list["Step | str"] | None


@dataclass
class Step:
    """One step as a dict; `id` is what later steps name in `needs` and expressions."""

    data: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.data["id"])


def text() -> dict[str, Any]:
    return {"mode": "text"}


def object_output(schema: Any) -> dict[str, Any]:
    return {"mode": "object", "schema": to_schema(schema)}


def array_output(schema: Any) -> dict[str, Any]:
    return {"mode": "array", "schema": to_schema(schema)}


def choice(*values: str) -> dict[str, Any]:
    return {"mode": "choice", "values": list(values)}


@dataclass
class Workflow:
    """An LWIR document under construction; `document()` is the LWIR dict."""

    name: str
    version: str = "0.1.0"
    description: str | None = None
    input: Any = None
    output: Any = None
    steps: list[Step] = field(default_factory=list)
    children: dict[str, Workflow] = field(default_factory=dict)  # invoked Workflow objects
    network: list[str] = field(default_factory=list)  # permissions.network

    def _add(self, step_id: str, uses: str, needs: Needs, extra: dict[str, Any]) -> Step:
        data: dict[str, Any] = {"id": step_id, "uses": uses}
        if needs:
            data["needs"] = [n.id if isinstance(n, Step) else n for n in needs]
        data.update({k: v for k, v in extra.items() if v is not None})
        step = Step(data)
        self.steps.append(step)
        return step

    def ai_generate(self, step_id: str, *, model: str, prompt: str, system: str | None = None,
                    output: dict[str, Any] | None = None, needs: Needs = None,
                    max_visits: int | None = None, **more: Any) -> Step:
        with_ = {"model": model, "prompt": prompt, **({"system": system} if system else {})}
        return self._add(step_id, "ai.generate", needs, {
            "maxVisits": max_visits, "with": with_, "output": output or text(), **more})

    def ai_agent(self, step_id: str, *, model: str, tools: list[str], prompt: str,
                 max_turns: int | None = None, system: str | None = None,
                 output: dict[str, Any] | None = None, needs: Needs = None,
                 max_visits: int | None = None, **more: Any) -> Step:
        """An ai.agent step: `model` calls `tools` (each added to permissions.tools)
        until it answers, in at most `max_turns` turns (default 10)."""
        with_ = {"model": model, "tools": list(tools), "prompt": prompt,
                 **({"maxTurns": max_turns} if max_turns is not None else {}),
                 **({"system": system} if system else {})}
        return self._add(step_id, "ai.agent", needs, {
            "maxVisits": max_visits, "with": with_, "output": output or text(), **more})

    def tool_call(self, step_id: str, tool: str, *, args: dict[str, Any] | None = None,
                  input: Any = None, output: dict[str, Any] | None = None,
                  needs: Needs = None, max_visits: int | None = None, **more: Any) -> Step:
        with_ = {"tool": tool, **({"args": args} if args is not None else {})}
        return self._add(step_id, "tool.call", needs, {
            "maxVisits": max_visits, "with": with_, "input": input, "output": output,
            **more})

    def code_run(self, step_id: str, file: str | Path, *, output: dict[str, Any],
                 input: Any = None, needs: Needs = None, fixer: dict[str, Any] | None = None,
                 **more: Any) -> Step:
        """A code.run step whose entrypoint is `file`, read now and pinned by sha256."""
        path = Path(file)
        content = path.read_text(encoding="utf-8")
        pin = "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()
        with_ = {"entrypoint": path.name,
                 "files": {path.name: {"content": content, "sha256": pin}},
                 "sandbox": {"network": "deny", "env": "deny", "fs": "deny"}}
        return self._add(step_id, "code.run", needs, {
            "with": with_, "input": input, "output": output,
            "onFailure": {"fixer": fixer} if fixer else None, **more})

    def decision(self, step_id: str, cases: list[tuple[str, str]], default: str,
                 *, needs: Needs = None, max_visits: int | None = None) -> Step:
        """`cases`: (when-expression, target step id or "end") in order."""
        with_ = {"cases": [{"when": when, "to": to} for when, to in cases],
                 "default": default}
        return self._add(step_id, "decision", needs, {"maxVisits": max_visits, "with": with_})

    def human_input(self, step_id: str, prompt: str, schema: Any, *, needs: Needs = None,
                    max_visits: int | None = None) -> Step:
        """A human.input step: the run waits for a person's answer to `prompt` (a
        template), checked against `schema` (a JSON Schema dict or a Python type)."""
        return self._add(step_id, "human.input", needs, {
            "maxVisits": max_visits, "with": {"prompt": prompt, "schema": to_schema(schema)}})

    def invoke(self, step_id: str, workflow: str | Path | Workflow, *, input: Any = None,
               output: dict[str, Any] | None = None, needs: Needs = None,
               max_visits: int | None = None) -> Step:
        """A workflow.invoke step: run `workflow` as a child run on `input` (a template;
        default: the workflow input). `workflow` is an LWIR file, named as the generated
        file will name it (relative to its folder; its permissions join this workflow's
        when that path is readable from the current folder: generate into the current
        folder, or grant them yourself), or a Workflow object, which `lwtool generate`
        writes beside the generated file as `<name>.lwir.yaml`."""
        if isinstance(workflow, Workflow):
            self.children[f"{workflow.name}.lwir.yaml"] = workflow
            ref = f"./{workflow.name}.lwir.yaml"
        else:
            ref = Path(workflow).as_posix()
        with_ = {"workflow": ref, **({"input": input} if input is not None else {})}
        return self._add(step_id, "workflow.invoke", needs, {
            "maxVisits": max_visits, "with": with_, "output": output})

    def files(self) -> dict[str, Workflow]:
        """The Workflow objects its invokes run, and theirs (file name -> workflow):
        what `lwtool generate` writes beside this one."""
        out: dict[str, Workflow] = {}
        for name, child in self.children.items():
            out[name] = child
            out.update(child.files())
        return out

    def parallel(self, step_id: str, items: str, body: Workflow, *, item_key: str,
                 max_branches: int, max_concurrency: int,
                 failure_mode: str = "all_settled", needs: Needs = None) -> Step:
        """`body`: a Workflow whose steps run once per item (they read `{{ item }}`)."""
        with_ = {"items": items, "itemKey": item_key, "maxBranches": max_branches,
                 "maxConcurrency": max_concurrency, "failureMode": failure_mode,
                 "fanIn": {"order": "input", "output": "array"}}
        return self._add(step_id, "parallel", needs, {
            "with": with_, "steps": [s.data for s in body.steps]})

    def document(self) -> dict[str, Any]:
        metadata = {"name": self.name, "version": self.version,
                    **({"description": self.description} if self.description else {})}
        tools, models, secrets = _used(self.steps, self.children)
        doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": "Workflow",
                               "metadata": metadata}
        if self.input is not None:
            doc["input"] = {"schema": to_schema(self.input)}
        if self.output is not None:
            doc["output"] = {"schema": to_schema(self.output)}
        # secrets and hosts only when used: the ids of workflows without them stay
        doc["permissions"] = {"tools": tools, "models": models,
                              **({"secrets": secrets} if secrets else {}),
                              **({"network": list(self.network)} if self.network else {})}
        doc["steps"] = [s.data for s in self.steps]
        return doc


def workflow(name: str, **settings: Any) -> Workflow:
    return Workflow(name, **settings)


def chain_workflows(*workflows: str | Path | Workflow, name: str | None = None,
                    **settings: Any) -> Workflow:
    """A workflow that invokes each of `workflows` in order (files or Workflow objects,
    as `Workflow.invoke` takes them), each one's output the next one's input: the first
    gets the chain's input, the chain's output is the last one's."""
    if not workflows:
        raise ValueError("chain_workflows needs at least one workflow")
    names = [w.name if isinstance(w, Workflow) else Path(w).name.split(".")[0]
             for w in workflows]
    chain = Workflow(name or "chain-" + "-".join(names), **settings)
    previous: Step | None = None
    for index, (child, child_name) in enumerate(zip(workflows, names, strict=True)):
        step_id = f"s{index + 1}_{_identifier(child_name)}"
        previous = chain.invoke(
            step_id, child, needs=[previous] if previous else None,
            input=f"{{{{ steps.{previous.id}.output }}}}" if previous else None)
    return chain


def _identifier(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:60]


def _used(steps: list[Step], children: dict[str, Workflow] | None = None
          ) -> tuple[list[str], list[str], list[str]]:
    tools: list[str] = []
    models: list[str] = []
    secrets: list[str] = []
    objects = {f"./{name}": child for name, child in (children or {}).items()}

    def grant(permissions: Any) -> None:
        permissions = permissions if isinstance(permissions, dict) else {}
        for kind, found in (("tools", tools), ("models", models), ("secrets", secrets)):
            for name in permissions.get(kind) or []:
                if name not in found:
                    found.append(name)

    def visit(data: dict[str, Any]) -> None:
        with_ = data.get("with") or {}
        if data.get("uses") == "workflow.invoke":  # a child reaches only what this grants
            ref = str(with_.get("workflow"))
            child = objects.get(ref)
            grant(child.document().get("permissions") if child is not None
                  else _file_permissions(ref))
        if data.get("uses") == "tool.call" and with_.get("tool") not in tools:
            tools.append(with_["tool"])
        if data.get("uses") in ("ai.generate", "ai.agent") and \
                with_.get("model") not in models:
            models.append(with_["model"])
        if data.get("uses") == "ai.agent":
            tools.extend(name for name in with_.get("tools") or [] if name not in tools)
        for name in data.get("secrets") or []:
            if name not in secrets:
                secrets.append(name)
        fixer = (data.get("onFailure") or {}).get("fixer") or {}
        if fixer.get("model") and fixer["model"] not in models:
            models.append(fixer["model"])
        for child in data.get("steps") or []:
            visit(child)

    for step in steps:
        visit(step.data)
    # Sorted: a version's hash covers these lists in order, so one fixed order keeps a
    # workflow's id when its steps are reordered without using anything new.
    return sorted(tools), sorted(models), sorted(secrets)


def _file_permissions(ref: str) -> Any:
    """The permissions of an invoked LWIR file (read from the current folder); None when
    it cannot be read (validation then says what is wrong with it)."""
    from lwtool.source.loader import LoadFailed, load_path

    try:
        value = load_path(ref).value
    except (LoadFailed, OSError):
        return None
    return value.get("permissions") if isinstance(value, dict) else None
