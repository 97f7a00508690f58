"""Where lwtool finds workflow files and their locks: light (no hashing, no schema), so
`lwtool validate` and `check` find their files without loading the lock machinery."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", ".little-workflow", "__pycache__",
              ".tox", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
# Every kind lwtool validates: LWIR (`.lwir.` or `.workflow.`), definitions, pipelines.
_LWIR_SUFFIXES = tuple(f".{kind}.{ext}" for kind in ("lwir", "workflow", "definition",
                                                      "pipeline")
                       for ext in ("yaml", "yml", "json"))


def lock_path_for(path: str | Path) -> Path:
    """`review.lwir.yaml` -> `review.lwir.lock.json` (same folder)."""
    p = Path(path)
    stem = p.name
    for suffix in (".yaml", ".yml", ".json"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return p.with_name(stem + ".lock.json")


def discover(paths: Iterable[Path]) -> list[Path]:
    """Files named directly, plus in folders: locked files and every *.lwir.*,
    *.workflow.*, *.definition.* and *.pipeline.* file."""
    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
            continue
        if not path.is_dir():
            raise FileNotFoundError(2, "not found", str(path))
        for candidate in sorted(_walk(path)):
            name = candidate.name.lower()
            if name.endswith(".lock.json"):
                continue
            try:
                locked = name.endswith((".yaml", ".yml", ".json")) and lock_path_for(
                    candidate).exists()
            except OSError:
                locked = False
            if name.endswith(_LWIR_SUFFIXES) or locked:
                found.append(candidate)
    return found


def _walk(root: Path) -> Iterable[Path]:
    """Files under `root`; linked folders are not followed (a link back up would never
    end) and folders that cannot be read are passed over."""
    try:
        entries = list(root.iterdir())
    except OSError:
        return
    for entry in entries:
        try:  # an entry that cannot even be looked at (/proc/1/...) is passed over
            folder = entry.is_dir() and not entry.is_symlink()
            plain = not folder and entry.is_file()
        except OSError:
            continue
        if folder:
            if entry.name not in _SKIP_DIRS:
                yield from _walk(entry)
        elif plain:
            yield entry
