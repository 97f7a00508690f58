"""Skills given at run time (`lwtool run --skill PATH`, the API's `skills=`): added to
the worker skills of this run (listed in every ai.generate call's system prompt, staged
for its sessions), recorded with the run (its options' workspace, never the LWIR: the
WorkflowVersion id is the same with or without them), part of every worker step's
manifest (`skillsHash`, by content), and checked as a definition's skills are (a
SKILL.md, no link out of the folder, no two of one name) before anything runs. A resume
keeps the run's; one asked with other run-time skills is capability drift."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

RUN_SKILLS = "runSkills"  # the workspace's key: the run-time skills, as given (absolute)


def with_run_skills(workspace: dict[str, Any] | None, sources: Sequence[str | Path],
                    data_dir: Path) -> dict[str, Any] | None:
    """`workspace` (a definition's, or None) with `sources` added to its skills; raises
    SkillError naming a source that is not a skill. Local sources become absolute."""
    if not sources:
        return workspace
    from lwtool.harness.skills import resolve_skills
    from lwtool.source.skill_source import is_git

    located = [str(s) if is_git(str(s)) else str(Path(s).resolve()) for s in sources]
    declared = [*((workspace or {}).get("skills") or []), *located]
    resolve_skills(declared, data_dir / "skills-cache", None)  # refused before any step
    return {**(workspace or {}), "skills": declared, RUN_SKILLS: located}


def skills_drift(recorded: dict[str, Any] | None, asked: dict[str, Any] | None) -> str:
    """Why resuming a run recorded with `recorded` (its workspace) with the workspace
    `asked` would change its run-time skills ("" when it would not: none asked, or the
    same)."""
    wanted = (asked or {}).get(RUN_SKILLS)
    if wanted is None:
        return ""
    had = (recorded or {}).get(RUN_SKILLS) or []
    if sorted(had) == sorted(wanted):
        return ""
    return (f"the run was started with --skill {', '.join(had) or '(none)'}, not "
            f"{', '.join(wanted)}: a run's skills are its own (resume it without --skill, "
            "or start a new run)")
