"""Skills under attack (hardening round 3): a skill source that injects git options is
refused before git runs and reported by `lwtool validate`; host-side work never follows
a link a sandboxed command planted (a SKILL.md link to a host file, an org-store skill
that is a link, a planted `.agents` link during staging); a huge or deeply nested
frontmatter is an error in time, not a hang or a RecursionError."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from lwtool.harness.skills import SkillError, load_skill, resolve_skills, stage_skills
from tests.conftest import run_cli
from tests.harness.test_skills import _skill


def _hostile_sources(mark: Path) -> list[str]:
    return [f"git+--upload-pack=touch {mark};://x@.",
            "git+ssh://-oProxyCommand=sh/x.git",
            f"git+file:///tmp/r.git@--upload-pack=touch {mark}",
            "git+file:///tmp/r.git#subdirectory=-x",
            f"git+ext::sh -c 'touch {mark}'://x",
            "git+https://h.example/o/r.git#upload-pack=x",
            f"git+file:///tmp/r.git@main\n--upload-pack=touch {mark}"]


def test_sources_that_inject_git_options_are_refused_before_git_runs(tmp_path: Path) -> None:
    mark = tmp_path / "pwned"
    for source in _hostile_sources(mark):
        with pytest.raises(SkillError):
            load_skill(source, tmp_path / "cache")
    assert not mark.exists()
    assert not (tmp_path / "cache").exists()  # nothing was fetched


def test_validate_reports_a_malformed_skill_source(tmp_path: Path) -> None:
    mark = tmp_path / "pwned"
    skills = json.dumps(_hostile_sources(mark)[:2])
    (tmp_path / "d.definition.yaml").write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\nid: review\n"
        f"planner:\n  model: planner\n  skills: {skills}\n"
        "worker:\n  skills: [\"git+https://h.example/o/r.git@v1\"]\n")
    done = run_cli("validate", "d.definition.yaml", "--format", "json", cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    findings = json.loads(done.stdout)["files"][0]["findings"]
    assert [(f["code"], f["pointer"], f["line"]) for f in findings] == [
        ("definition.invalid_skill_source", "/planner/skills/0", 6),
        ("definition.invalid_skill_source", "/planner/skills/1", 6)]
    assert "would be read as a git option" in findings[1]["message"]
    assert not mark.exists()


def test_a_skill_md_link_to_a_host_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    host = tmp_path / "host-secret"
    host.write_text("---\nname: leak\ndescription: " + "x" * 1000 + "\n---\n")
    (tmp_path / "s").mkdir()
    (tmp_path / "s/SKILL.md").symlink_to(host)
    with pytest.raises(SkillError, match="is a link"):
        load_skill(str(tmp_path / "s"), tmp_path / "cache")
    fifo = tmp_path / "f"
    fifo.mkdir()
    subprocess.run(["mkfifo", str(fifo / "SKILL.md")], check=True)
    with pytest.raises(SkillError, match="not a regular file"):  # no hang on a FIFO
        load_skill(str(fifo), tmp_path / "cache")


@pytest.mark.parametrize(("frontmatter", "says"), [
    ("name: x\ndescription: d\npad: '" + "y" * 7_000_000 + "'\n", "no closing '---'"),
    ("name: x\ndescription: d\ndeep: " + "[" * 50_000 + "]" * 50_000 + "\n",
     "no closing '---'"),
    ("name: x\ndescription: d\ndeep: " + "[" * 20_000 + "]" * 20_000 + "\n",
     "nested too deeply"),
])
def test_huge_or_deep_frontmatter_is_an_error_in_time(tmp_path: Path, frontmatter: str,
                                                      says: str) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s/SKILL.md").write_text(f"---\n{frontmatter}---\nbody\n")
    started = time.monotonic()
    with pytest.raises(SkillError, match=says):
        load_skill(str(tmp_path / "s"), tmp_path / "cache")
    assert time.monotonic() - started < 10


def test_an_org_skill_that_is_a_link_is_skipped(tmp_path: Path) -> None:
    host = _skill(tmp_path / "host" / "private", "private")
    (host / "secret.txt").write_text("host data")
    org = tmp_path / "memory" / "org" / "skills"
    _skill(org / "ok", "ok")
    (org / "planted").symlink_to(host)
    skills, warnings = resolve_skills([], tmp_path / "cache", org)
    assert [s.name for s in skills] == ["ok"]
    assert warnings == [f"org skill {org / 'planted'} is a link: skipped"]


@pytest.mark.parametrize("planted", [".agents", ".agents/skills"])
def test_staging_replaces_a_planted_link_instead_of_writing_through_it(
        tmp_path: Path, planted: str) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "keep.txt").write_text("host file")
    (host / "skills").mkdir()
    (host / "skills" / "keep.txt").write_text("host file")
    workdir = tmp_path / "scratch"
    (workdir / ".agents").mkdir(parents=True)
    if planted == ".agents":
        (workdir / ".agents").rmdir()
    (workdir / planted).symlink_to(host if planted == ".agents" else host / "skills")
    skill = load_skill(str(_skill(tmp_path / "src" / "review", "review")), tmp_path / "cache")
    agents = stage_skills([skill], workdir)
    assert not agents.is_symlink() and not (agents / "skills").is_symlink()
    assert (agents / "skills" / "review" / "SKILL.md").is_file()
    assert sorted(p.relative_to(host).as_posix() for p in host.rglob("*")) == [
        "keep.txt", "skills", "skills/keep.txt"]
