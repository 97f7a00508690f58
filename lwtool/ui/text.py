"""How the inspector writes times, durations, money, ids and JSON on its pages."""

from __future__ import annotations

import json
import time
from typing import Any

PREVIEW = 180


def stamp(at: float | None) -> str:
    return "" if at is None else time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(at))


def span(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def money(cost: float | None, calls: int) -> str:
    if cost is None:
        return "unpriced" if calls else "—"
    return f"${cost:.4f}" if cost >= 0.01 else f"${cost:.6f}"


def short(version_id: str) -> str:
    return version_id.removeprefix("sha256:")[:12]


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def preview(value: Any, limit: int = PREVIEW) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def full(payload: dict[str, Any]) -> str:
    """An event payload as pretty JSON, cut at 4,000 characters."""
    text = pretty(payload)
    return text if len(text) <= 4000 else text[:4000] + "\n… (see the step's page)"
