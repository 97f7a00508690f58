"""Skill sources as written in a definition: a local folder (or its SKILL.md), or
`git+<scheme>://<rest>[@<ref>][#subdirectory=<path>]`. A Git source is parsed strictly,
since its parts become arguments of `git`: the scheme is one of SCHEMES, no part
starts with `-` (it would be read as an option), and no part holds whitespace or
control characters. Kept free of heavy imports: the validator uses it too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs

SCHEMES = ("https", "http", "ssh", "git", "file")
GIT_PREFIX = "git+"
_UNSAFE = re.compile(r"[\x00-\x20\x7f]")


class SkillSourceInvalid(ValueError):
    """A `git+` skill source that is malformed or unsafe; the message says why."""


class GitSource(NamedTuple):
    url: str
    ref: str | None
    subdirectory: str | None


def is_git(source: str) -> bool:
    return source.startswith(GIT_PREFIX)


def parse_git_source(source: str) -> GitSource:
    """`git+URL[@REF][#subdirectory=PATH]`, checked part by part."""
    rest, _, fragment = source[len(GIT_PREFIX):].partition("#")
    scheme, sep, tail = rest.partition("://")
    if not sep or not tail:
        raise SkillSourceInvalid("a Git skill is git+<scheme>://<repository>[@<ref>]"
                                 "[#subdirectory=<path>]")
    if scheme not in SCHEMES:
        raise SkillSourceInvalid(f"scheme {scheme!r} is not allowed (use one of "
                                 f"{', '.join(SCHEMES)})")
    ref = None
    if "@" in tail.rsplit("/", 1)[-1]:
        tail, ref = tail.rsplit("@", 1)
    subdirectory = None
    if fragment:
        fields = parse_qs(fragment, keep_blank_values=True)
        if set(fields) != {"subdirectory"} or len(fields["subdirectory"]) != 1:
            raise SkillSourceInvalid("the only fragment is #subdirectory=<path>")
        subdirectory = fields["subdirectory"][0]
    for label, part in (("repository", tail), ("ref", ref), ("subdirectory", subdirectory)):
        if part is None:
            continue
        if not part or _UNSAFE.search(part):
            raise SkillSourceInvalid(f"the {label} is empty or holds whitespace or "
                                     "control characters")
        if any(piece.startswith("-") for piece in re.split(r"[/@:]", part)):
            raise SkillSourceInvalid(f"a part of the {label} starts with '-' ({part!r}): "
                                     "it would be read as a git option")
    return GitSource(f"{scheme}://{tail}", ref, subdirectory)


def source_problem(source: str) -> str | None:
    """Why a skill source cannot be used (None: it can be tried)."""
    if not source.strip():
        return "a skill source is empty"
    if is_git(source):
        try:
            parse_git_source(source)
        except SkillSourceInvalid as exc:
            return str(exc)
    return None


def located(source: str, base: Path | None) -> str:
    """A skill source as a session reads it: a git URL or an absolute path as given, a
    relative path resolved against `base` (the definition's or pipeline's folder)."""
    if is_git(source) or base is None or Path(source).is_absolute():
        return source
    return str((base / source).resolve())
