"""The Python generator API: workflows and definitions built in Python emit the files
the CLI reads (validated, hash-stable), pydantic schemas inlined into the subset,
code.run pinned from its file, and `lwtool generate` / `lwtool check` catching a
committed file that no longer matches its generator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from lwtool.authoring import (
    define_workflow,
    memory,
    model_slot,
    object_output,
    planner,
    text,
    to_schema,
    workflow,
)
from lwtool.authoring.schemas import SchemaNotSupported
from lwtool.canonical.digest import workflow_version_id
from lwtool.runtime.api import checked_lwir
from tests.conftest import run_cli


class Address(BaseModel):
    city: str


class Applicant(BaseModel):
    name: str
    address: Address
    tags: list[str] = []


def build() -> dict[str, object]:
    wf = workflow("loan-summary", description="Summarize an application.",
                  input=Applicant, output=str)
    credit = wf.tool_call("credit", "creditScore", args={"applicant": "{{ input.name }}"})
    wf.ai_generate("summarize", model="gpt-4o-mini", needs=[credit], output=text(),
                   prompt="Summarize.\nScore: {{ steps.credit.output.score }}")
    return wf.document()


def test_a_built_workflow_is_valid_lwir_with_derived_permissions() -> None:
    document = build()
    assert checked_lwir(document) == document
    assert document["permissions"] == {"tools": ["creditScore"], "models": ["gpt-4o-mini"]}
    assert workflow_version_id(build()) == workflow_version_id(document)  # stable


def test_pydantic_schemas_are_inlined_into_the_subset() -> None:
    schema = to_schema(Applicant)
    assert "$defs" not in json.dumps(schema) and "$ref" not in json.dumps(schema)
    assert schema["properties"]["address"] == {  # type: ignore[index]
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    assert to_schema(str) == {"type": "string"}

    class Node(BaseModel):
        children: list[Node] = []

    with pytest.raises(SchemaNotSupported, match="refers to itself"):
        to_schema(Node)
    with pytest.raises(SchemaNotSupported):
        to_schema(object())


def test_code_run_is_pinned_from_its_file(tmp_path: Path) -> None:
    source = tmp_path / "score.ts"
    source.write_text("export async function run({ input }) { return { n: 1 }; }\n")
    wf = workflow("score", input=dict, output=dict)
    wf.code_run("score", source, output=object_output({"type": "object"}))
    document = wf.document()
    assert checked_lwir(document) == document  # the pin matches (code.pin_mismatch else)
    assert document["steps"][0]["with"]["entrypoint"] == "score.ts"  # type: ignore[index]


def test_a_definition_built_in_python(tmp_path: Path) -> None:
    definition = define_workflow(
        "loan", description="Summarize a loan application.", input=Applicant, output=str,
        models=[model_slot("gpt-4o-mini", "openai/gpt-4o-mini")], tools=["creditScore"],
        planner=planner(model="planner", max_revisions=2), memory=memory(org="none"))
    path = tmp_path / "loan.definition.json"
    path.write_text(json.dumps(definition.document()))
    assert run_cli("validate", str(path)).returncode == 0


GENERATOR = '''\
from lwtool.authoring import workflow, text

def loan():
    wf = workflow("loan-summary", input={"type": "object"}, output={"type": "string"})
    wf.ai_generate("summarize", model="gpt-4o-mini", prompt="PROMPT", output=text())
    return wf
'''


def test_generate_then_check_catches_a_changed_generator(tmp_path: Path) -> None:
    (tmp_path / "gen.py").write_text(GENERATOR.replace("PROMPT", "Summarize."))
    done = run_cli("generate", "gen.py:loan", "-o", "loan.lwir.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lock = json.loads((tmp_path / "loan.lwir.lock.json").read_text())
    assert lock["generator"] == "gen.py:loan"
    assert run_cli("validate", "loan.lwir.yaml", cwd=tmp_path).returncode == 0
    assert run_cli("check", "loan.lwir.yaml", cwd=tmp_path).returncode == 0
    (tmp_path / "gen.py").write_text(GENERATOR.replace("PROMPT", "Summarize briefly."))
    stale = run_cli("check", "loan.lwir.yaml", cwd=tmp_path)
    assert stale.returncode == 1 and "generate.stale" in stale.stdout
    assert "lwtool generate gen.py:loan -o loan.lwir.yaml" in stale.stdout
    assert run_cli("generate", "gen.py:loan", "-o", "loan.lwir.yaml",
                   cwd=tmp_path).returncode == 0
    assert run_cli("check", "loan.lwir.yaml", cwd=tmp_path).returncode == 0
    assert run_cli("lock", "loan.lwir.yaml", cwd=tmp_path).returncode == 0  # keeps it
    relocked = json.loads((tmp_path / "loan.lwir.lock.json").read_text())
    assert relocked["generator"] == "gen.py:loan"


def test_generate_refuses_invalid_documents_and_bad_generators(tmp_path: Path) -> None:
    (tmp_path / "gen.py").write_text(GENERATOR.replace("PROMPT", "{{ steps.nope.output }}"))
    bad = run_cli("generate", "gen.py:loan", "-o", "out.lwir.yaml", cwd=tmp_path)
    assert bad.returncode == 1 and not (tmp_path / "out.lwir.yaml").exists()
    assert "out.lwir.yaml:21:19: error step.missing_dependency" in bad.stderr
    missing = run_cli("generate", "gen.py:nothing", "-o", "out.lwir.yaml", cwd=tmp_path)
    assert missing.returncode == 2 and "generator" in missing.stderr


def test_the_readme_shows_one_workflow_both_ways(tmp_path: Path) -> None:
    from lwtool.compile import compile_file
    from tests.conftest import ROOT

    section = (ROOT / "README.md").read_text().split("### Python generator API", 1)[1]
    yaml_text = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    python_text = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "written.lwir.yaml").write_text(yaml_text)
    (tmp_path / "loan.py").write_text(python_text)
    done = run_cli("generate", "loan.py:loan", "-o", "generated.lwir.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = compile_file(tmp_path / "written.lwir.yaml")
    generated = compile_file(tmp_path / "generated.lwir.yaml")
    assert written.ok and generated.ok
    assert written.digest() == generated.digest()  # the same WorkflowVersion


def test_definition_hash_takes_skills_by_content(tmp_path: Path) -> None:
    from lwtool.authoring.snapshot import definition_hash

    for folder in ("skills/a", "moved/a"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "SKILL.md").write_text("---\nname: a\ndescription: A.\n---\n")
    definition = define_workflow("d", planner=planner(model="p", skills=["skills/a"])).value
    moved = define_workflow("d", planner=planner(model="p", skills=["moved/a"])).value
    assert definition_hash(definition, tmp_path) == definition_hash(moved, tmp_path)
    before = definition_hash(definition, tmp_path)
    (tmp_path / "skills/a/SKILL.md").write_text("---\nname: a\ndescription: A, edited.\n---\n")
    assert definition_hash(definition, tmp_path) != before
    # A committed definition's lock goes stale when a skill's content changes.
    path = tmp_path / "d.definition.json"
    path.write_text(json.dumps(definition))
    assert run_cli("lock", str(path)).returncode == 0
    assert run_cli("check", str(path)).returncode == 0
    (tmp_path / "skills/a/extra.md").write_text("more")
    stale = run_cli("check", str(path))
    assert stale.returncode == 1 and "lock.stale" in stale.stdout


CHAIN = '''
from lwtool import chain_workflows
from lwtool.authoring import workflow

shout = workflow("shout", input={"type": "object"})
shout.tool_call("up", "improve", input={"text": "{{ input.text }}"})
chain = chain_workflows("./refine-loop.lwir.yaml", shout, name="polish-then-shout")
'''


def test_chain_workflows_writes_a_parent_and_its_object_children(tmp_path: Path) -> None:
    """Each workflow invoked in order, each output the next input; a Workflow object is
    written beside the parent with its lock; the chain grants what its children reach;
    it runs, and `check` holds until a child changes."""
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "refine-loop.lwir.yaml").write_text(
        (root / "examples" / "refine-loop.lwir.yaml").read_text())
    (tmp_path / "chain.py").write_text(CHAIN)
    assert run_cli("lock", "refine-loop.lwir.yaml", cwd=tmp_path).returncode == 0
    made = run_cli("generate", "chain.py:chain", "-o", "chain.lwir.yaml", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert [line.split(":")[0] for line in made.stdout.splitlines()] == [
        "shout.lwir.yaml", "chain.lwir.yaml"]
    chain = yaml_load(tmp_path / "chain.lwir.yaml")
    assert chain["permissions"]["tools"] == ["checkText", "improve", "publish"]
    assert [(s["id"], s["with"]["workflow"], s["with"].get("input")) for s in chain["steps"]] \
        == [("s1_refine-loop", "refine-loop.lwir.yaml", None),
            ("s2_shout", "./shout.lwir.yaml", "{{ steps.s1_refine-loop.output }}")]
    assert run_cli("check", ".", cwd=tmp_path).returncode == 0
    (tmp_path / "in.json").write_text('{"text": "Hi."}')
    ran = run_cli("run", "chain.lwir.yaml", "-i", "in.json", "--tools",
                  f"{root / 'examples' / 'tools.py'}:tools", "--data-dir", "d", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"text": "Hi!!!!"}
    shout = tmp_path / "shout.lwir.yaml"
    shout.write_text(shout.read_text().replace("id: up", "id: louder"))
    stale = run_cli("check", "chain.lwir.yaml", cwd=tmp_path)
    assert stale.returncode == 1 and "child workflow ./shout.lwir.yaml" in stale.stdout


def yaml_load(path: Path) -> dict[str, object]:
    from ruamel.yaml import YAML

    loaded: dict[str, object] = YAML(typ="safe", pure=True).load(path.read_text())
    return loaded


def test_a_generated_workflow_lists_its_steps_secrets_and_its_hosts() -> None:
    from lwtool.authoring.builders import workflow as new_workflow
    from lwtool.source.loader import load_text
    from lwtool.validate.run import validate_document

    wf = new_workflow("issues", network=["api.github.com:443"])
    wf.tool_call("file", "create_issue", secrets=["GITHUB_TOKEN"], sensitive=True)
    doc = wf.document()
    assert doc["permissions"] == {"tools": ["create_issue"], "models": [],
                                  "secrets": ["GITHUB_TOKEN"],
                                  "network": ["api.github.com:443"]}
    assert doc["steps"][0]["sensitive"] is True
    assert validate_document(load_text(json.dumps(doc), "w.json")) == []
    plain = new_workflow("plain")
    plain.tool_call("a", "t")
    assert "secrets" not in plain.document()["permissions"]  # ids of older files stay
