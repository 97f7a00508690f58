"""Skills: SKILL.md frontmatter (name and description required, errors with file:line),
workflow skills unioned with the org store's (the workflow's win, with a warning),
Git-URL skills resolved to a commit and cached by its SHA (a local repository, no
network), identity by content, the listing for the system prompt, and staging."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lwtool.harness.skills import (
    SkillError,
    load_skill,
    parse_git_source,
    resolve_skills,
    skills_hash,
    skills_prompt,
    stage_skills,
)


def _skill(folder: Path, name: str, description: str = "Does a thing.",
           body: str = "# Steps\n1. do it\n", extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n{extra}---\n{body}")
    return folder


def test_a_local_skill_folder_or_its_skill_md(tmp_path: Path) -> None:
    folder = _skill(tmp_path / "review", "code-review", "Review a diff\n  line by line.")
    (folder / "checklist.md").write_text("- tests\n")
    skill = load_skill(str(folder), tmp_path / "cache")
    assert (skill.name, skill.description) == ("code-review", "Review a diff line by line.")
    assert load_skill(str(folder / "SKILL.md"), tmp_path / "cache").folder == skill.folder
    assert load_skill("review", tmp_path / "cache", base=tmp_path).digest == skill.digest


@pytest.mark.parametrize(("text", "where", "says"), [
    ("# no frontmatter\n", ":1:1:", "must start with YAML frontmatter"),
    ("---\nname: x\n", ":1:1:", "no closing '---'"),
    ("---\ndescription: d\n---\n", ":2:1:", "needs 'name'"),
    ("---\nname: x\n---\n", ":2:1:", "needs 'description'"),
    ("---\nname: x\ndescription: ''\n---\n", ":3:1:", "needs 'description'"),
    ("---\nname: Bad_Name\ndescription: d\n---\n", ":2:1:", "lowercase letters"),
    ("---\nname: x\ndescription: [unclosed\n---\n", ":3:23:", "not YAML"),
    ("---\n- a list\n---\n", ":2:1:", "must be a mapping"),
    (f"---\nname: x\ndescription: {'d' * 1100}\n---\n", ":3:1:", "longer than 1024"),
])
def test_bad_frontmatter_is_an_error_at_its_position(tmp_path: Path, text: str, where: str,
                                                     says: str) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s/SKILL.md").write_text(text)
    with pytest.raises(SkillError) as info:
        load_skill(str(tmp_path / "s"), tmp_path / "cache")
    assert f"{tmp_path / 's/SKILL.md'}{where}" in str(info.value) and says in str(info.value)


def test_a_folder_without_skill_md_or_with_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SkillError, match="no SKILL.md"):
        load_skill(str(tmp_path / "empty"), tmp_path / "cache")
    folder = _skill(tmp_path / "s", "s")
    (folder / "secrets").symlink_to("/etc")
    with pytest.raises(SkillError, match="not symlinks"):
        load_skill(str(folder), tmp_path / "cache")


def test_workflow_skills_override_org_skills_with_a_warning(tmp_path: Path) -> None:
    org = tmp_path / "org-skills"
    _skill(org / "style", "style", "The org's style guide.")
    _skill(org / "triage", "triage", "The org's triage.")
    mine = _skill(tmp_path / "mine/triage", "triage", "Our own triage.")
    skills, warnings = resolve_skills([str(mine)], tmp_path / "cache", org)
    assert [(s.name, s.description) for s in skills] == [
        ("style", "The org's style guide."), ("triage", "Our own triage.")]
    assert len(warnings) == 1 and "skill 'triage'" in warnings[0] and "overrides" in warnings[0]
    assert skills_prompt(skills) == (
        "Available skills (read via cat .agents/skills/<name>/SKILL.md):\n"
        "- style: The org's style guide.\n- triage: Our own triage.")
    twin = _skill(tmp_path / "twin", "triage")
    with pytest.raises(SkillError, match="two skills are named 'triage'"):
        resolve_skills([str(mine), str(twin)], tmp_path / "cache", org)


def test_identity_is_content_not_path(tmp_path: Path) -> None:
    a = load_skill(str(_skill(tmp_path / "a", "s")), tmp_path / "cache")
    b = load_skill(str(_skill(tmp_path / "elsewhere/b", "s")), tmp_path / "cache")
    assert skills_hash([a]) == skills_hash([b])
    (tmp_path / "a/extra.md").write_text("more")
    changed = load_skill(str(tmp_path / "a"), tmp_path / "cache")
    assert skills_hash([changed]) != skills_hash([a])


def test_staging_copies_each_skill_under_agents_skills(tmp_path: Path) -> None:
    skill = load_skill(str(_skill(tmp_path / "src", "s", body="body\n")), tmp_path / "cache")
    work = tmp_path / "work"
    (work / ".agents/skills/stale").mkdir(parents=True)
    agents = stage_skills([skill], work)
    assert agents == work / ".agents"
    assert (agents / "skills/s/SKILL.md").read_text().endswith("body\n")
    assert not (agents / "skills/stale").exists()


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def test_git_skills_are_cached_by_commit_sha(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _skill(repo / "skills/deploy", "deploy", "Deploy safely.")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    _git(repo, "tag", "-a", "v1", "-m", "v1")
    cache = tmp_path / "data/skills-cache"
    source = f"git+file://{repo}@main#subdirectory=skills/deploy"
    skill = load_skill(source, cache)
    assert skill.name == "deploy" and skill.folder == cache / first / "skills/deploy"
    assert not (cache / first / ".git").exists()
    assert load_skill(f"git+file://{repo}@v1#subdirectory=skills/deploy", cache).folder == \
        skill.folder  # an annotated tag resolves to its commit
    # A new commit on main is a new SHA; the pinned one stays cached.
    _skill(repo / "skills/deploy", "deploy", "Deploy safely, twice.")
    _git(repo, "commit", "-q", "-am", "two")
    assert load_skill(source, cache).description == "Deploy safely, twice."
    # Pinned to a SHA that is cached: no git needed at all.
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    pinned = load_skill(f"git+file://{repo}@{first}#subdirectory=skills/deploy", cache)
    assert pinned.description == "Deploy safely."
    monkeypatch.undo()
    with pytest.raises(SkillError, match="no ref 'nope'"):
        load_skill(f"git+file://{repo}@nope", cache)
    with pytest.raises(SkillError, match="leaves the repository"):
        load_skill(f"git+file://{repo}@main#subdirectory=../..", cache)
    with pytest.raises(SkillError, match="git ls-remote failed"):
        load_skill(f"git+file://{tmp_path}/missing@main", cache)


def test_git_source_syntax() -> None:
    assert parse_git_source("git+https://h.example/o/r.git@v2#subdirectory=a/b") == (
        "https://h.example/o/r.git", "v2", "a/b")
    assert parse_git_source("git+ssh://git@h.example/o/r.git") == (
        "ssh://git@h.example/o/r.git", None, None)
    with pytest.raises(SkillError, match="git\\+<scheme>://"):
        parse_git_source("git+nothing")
