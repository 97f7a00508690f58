"""Skills: folders with a SKILL.md whose YAML frontmatter names the skill and says what
it is for (`name`, `description`, both required). A session lists them in its system
prompt (descriptions only) and stages them read-only at `.agents/skills/<name>/` in its
working directory; the model reads a body on demand (`cat .agents/skills/x/SKILL.md`).

Sources: a local folder (or its SKILL.md), or a Git URL,
`git+<url>[@<ref>][#subdirectory=<path>]` (`file://`, `https://`, `ssh://`...),
resolved to a commit SHA and cached by it in `<dataDir>/skills-cache/<sha>/`; a source
pinned to a full SHA that is cached needs no Git at all. Git sources are parsed strictly
(lwtool.source.skill_source: allowed schemes, no part read as an option), Git gets
`--` before every URL and only the allowed protocols (GIT_ALLOW_PROTOCOL).

Host-side file work never follows a link a sandboxed command could have planted: a
SKILL.md or an org-store skill folder that is a link is refused, the frontmatter is
read from at most MAX_FRONTMATTER bytes, and staging replaces a planted `.agents` link
instead of writing through it. A session's skills are the
workflow's (or the caller's) unioned with the org store's (`memory/org/skills/*/`); on
a name clash the workflow's wins and a warning says so. A skill is identified by its
content (name plus a digest of every file), never by the path it was read from.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lwtool.record.ids import short_hash
from lwtool.source.skill_source import SCHEMES, SkillSourceInvalid, is_git
from lwtool.source.skill_source import parse_git_source as _parse
from lwtool.world.files import NotARegularFile, open_regular

NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
FULL_SHA = re.compile(r"[0-9a-f]{40}")
MAX_DESCRIPTION = 1024
MAX_FRONTMATTER = 64 * 1024  # bytes of SKILL.md read for the frontmatter
MAX_FLOW_DEPTH = 64  # nesting of [ ] and { } in the frontmatter
SKILL_FILE = "SKILL.md"


class SkillError(Exception):
    """A skill that cannot be used; the message starts with its file (and line:col)."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    folder: Path
    source: str
    digest: str

    def listed(self) -> dict[str, str]:
        return {"name": self.name, "source": self.source, "digest": self.digest}


def load_skill(source: str, cache_dir: Path, base: Path | None = None) -> Skill:
    """Read one skill from a folder, a SKILL.md path or a `git+` URL."""
    if is_git(source):
        folder = fetch_git_skill(source, cache_dir)
    else:
        folder = Path(source).expanduser()
        if base is not None and not folder.is_absolute():
            folder = base / folder
        if folder.name == SKILL_FILE:
            folder = folder.parent
    skill_file = folder / SKILL_FILE
    name, description = _frontmatter(skill_file, _head(skill_file))
    return Skill(name, description, folder, source, folder_digest(folder))


def _head(path: Path) -> str:
    """The first MAX_FRONTMATTER bytes of a SKILL.md that is a regular file (a link, a
    FIFO or a device is refused before anything is read)."""
    try:
        fd = open_regular(path)
    except NotARegularFile:
        raise SkillError(f"{path}: is a link or not a regular file (a skill holds plain "
                         "files)") from None
    except FileNotFoundError:
        raise SkillError(f"{path}: no {SKILL_FILE} (a skill is a folder with one)") from None
    except OSError as exc:
        raise SkillError(f"{path}: {exc.strerror or 'cannot be read'}") from None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(MAX_FRONTMATTER).decode("utf-8", errors="replace")


def _frontmatter(path: Path, text: str) -> tuple[str, str]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillError(f"{path}:1:1: {SKILL_FILE} must start with YAML frontmatter "
                         "('---', name: ..., description: ..., '---')")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), None)
    if end is None:
        raise SkillError(f"{path}:1:1: the frontmatter has no closing '---' within its "
                         f"first {MAX_FRONTMATTER // 1024} KiB")
    if _flow_depth(lines[1:end]) > MAX_FLOW_DEPTH:  # before ruamel, which takes seconds
        raise SkillError(f"{path}:2:1: the frontmatter is nested too deeply (more than "
                         f"{MAX_FLOW_DEPTH} levels of [ ] or {{ }})")
    try:
        data = YAML(typ="rt").load("\n".join(lines[1:end]))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{mark.line + 2}:{mark.column + 1}" if mark else "2:1"
        raise SkillError(f"{path}:{where}: the frontmatter is not YAML: {exc.problem}") \
            from None
    except RecursionError:
        raise SkillError(f"{path}:2:1: the frontmatter is nested too deeply") from None
    except YAMLError as exc:  # e.g. a control character the reader refuses
        raise SkillError(f"{path}:2:1: the frontmatter is not YAML: "
                         f"{' '.join(str(exc).split())[:200]}") from None
    if not isinstance(data, dict):
        raise SkillError(f"{path}:2:1: the frontmatter must be a mapping")
    for key in ("name", "description"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise SkillError(f"{path}:{_line_of(data, key)}: frontmatter needs '{key}' "
                             "(a non-empty string)")
    name, description = data["name"].strip(), " ".join(data["description"].split())
    if not NAME.fullmatch(name) or len(name) > 64:
        raise SkillError(f"{path}:{_line_of(data, 'name')}: skill name {name!r} must be "
                         "lowercase letters, digits and single hyphens (at most 64)")
    if len(description) > MAX_DESCRIPTION:
        raise SkillError(f"{path}:{_line_of(data, 'description')}: the description is "
                         f"longer than {MAX_DESCRIPTION} characters")
    return name, description


def _flow_depth(lines: list[str]) -> int:
    """The deepest nesting of flow collections ([ ] and { }), brackets in quotes
    counted too (a frontmatter only needs a name and a description)."""
    depth = deepest = 0
    for line in lines:
        for char in line:
            if char in "[{":
                depth += 1
                deepest = max(deepest, depth)
            elif char in "]}":
                depth = max(depth - 1, 0)
    return deepest


def _line_of(data: object, key: str) -> str:
    try:
        line, col = data.lc.key(key)  # type: ignore[attr-defined]
        return f"{line + 2}:{col + 1}"
    except (AttributeError, KeyError, TypeError):
        return "2:1"


def folder_digest(folder: Path) -> str:
    """sha256 over every file's relative path and bytes (symlinks refused)."""
    from lwtool.canonical.digest import folder_digest as digest

    try:
        return digest(folder)
    except ValueError as exc:
        raise SkillError(str(exc)) from None


def fetch_git_skill(source: str, cache_dir: Path) -> Path:
    """The cached checkout of a `git+` skill source (fetched on first use)."""
    url, ref, subdirectory = parse_git_source(source)
    sha = ref if ref and FULL_SHA.fullmatch(ref) else _resolve_ref(url, ref or "HEAD")
    checkout = cache_dir / sha
    if not checkout.is_dir():
        cache_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = cache_dir / f".{sha}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            _git("clone", "--quiet", "--no-checkout", "--", url, str(temp))
            _git("-C", str(temp), "checkout", "--quiet", "--detach", sha)
            shutil.rmtree(temp / ".git")
            try:
                temp.rename(checkout)
            except OSError:
                if not checkout.is_dir():  # another process cached it first: fine
                    raise
        finally:
            shutil.rmtree(temp, ignore_errors=True)
    folder = (checkout / subdirectory).resolve() if subdirectory else checkout
    if not folder.is_relative_to(checkout.resolve()):
        raise SkillError(f"{source}: subdirectory {subdirectory!r} leaves the repository")
    return folder


def parse_git_source(source: str) -> tuple[str, str | None, str | None]:
    """`git+URL[@REF][#subdirectory=PATH]` -> (URL, REF, PATH); SkillError when it is
    malformed or unsafe."""
    try:
        return _parse(source)
    except SkillSourceInvalid as exc:
        raise SkillError(f"{source}: {exc}") from None


def _resolve_ref(url: str, ref: str) -> str:
    out = _git("ls-remote", "--", url, ref, f"refs/tags/{ref}^{{}}")
    shas = {name: sha for sha, name in (line.split("\t", 1) for line in out.splitlines())}
    peeled = shas.get(f"refs/tags/{ref}^{{}}")
    sha = peeled or next(iter(shas.values()), None)
    if sha is None:
        raise SkillError(f"git+{url}: no ref {ref!r} in the repository")
    return sha


def _git(*args: str) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ALLOW_PROTOCOL": ":".join(SCHEMES)}
    try:
        done = subprocess.run(["git", "-c", "protocol.ext.allow=never", *args],
                              capture_output=True, text=True, env=env, timeout=300,
                              check=False)
    except FileNotFoundError:
        raise SkillError("Git skills need git on PATH") from None
    if done.returncode != 0:
        raise SkillError(f"git {args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def resolve_skills(sources: Iterable[str], cache_dir: Path, org_skills: Path | None,
                   base: Path | None = None) -> tuple[list[Skill], list[str]]:
    """The session's skills (declared ones, then the org's) and the override warnings."""
    declared: dict[str, Skill] = {}
    for source in sources:
        skill = load_skill(source, cache_dir, base)
        if skill.name in declared:
            raise SkillError(f"two skills are named '{skill.name}': "
                             f"{declared[skill.name].source} and {source}")
        declared[skill.name] = skill
    warnings: list[str] = []
    org: dict[str, Skill] = {}
    if org_skills is not None and org_skills.is_dir() and not org_skills.is_symlink():
        for folder in sorted(org_skills.iterdir()):
            if folder.is_symlink():  # a store is written by sandboxed sessions
                warnings.append(f"org skill {folder} is a link: skipped")
                continue
            if not (folder / SKILL_FILE).is_file():
                continue
            skill = load_skill(str(folder), cache_dir)
            if skill.name in declared:
                warnings.append(f"skill '{skill.name}' ({declared[skill.name].source}) "
                                f"overrides the org skill of the same name ({folder})")
            else:
                org[skill.name] = skill
    skills = sorted([*declared.values(), *org.values()], key=lambda s: s.name)
    return skills, warnings


def skills_hash(skills: Iterable[Skill]) -> str:
    return short_hash(sorted([s.name, s.digest] for s in skills))


def skills_prompt(skills: list[Skill]) -> str:
    if not skills:
        return ""
    return ("Available skills (read via cat .agents/skills/<name>/SKILL.md):\n"
            + "\n".join(f"- {s.name}: {s.description}" for s in skills))


def stage_skills(skills: list[Skill], workdir: Path) -> Path:
    """Copy the skills to `<workdir>/.agents/skills/<name>/` (replacing what was there);
    the returned `.agents` folder is mounted read-only over itself."""
    agents = workdir / ".agents"
    staged = agents / "skills"
    for planted in (agents, staged):  # what a sandboxed command left is replaced, not followed
        if planted.is_symlink() or (planted.exists() and not planted.is_dir()):
            planted.unlink()
        elif planted is staged and planted.is_dir():
            shutil.rmtree(planted)
    staged.mkdir(mode=0o700, parents=True)
    for skill in skills:
        shutil.copytree(skill.folder, staged / skill.name,
                        ignore=shutil.ignore_patterns(".git"))
    return agents
