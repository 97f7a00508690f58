"""Text for a terminal. Whatever lwtool prints that came from a run, a model or a file
(a `human.input` prompt, a tool's error, a model's answer, a run id) goes through
`safe_text` first: a C0 or C1 control character (ESC, BEL, CSI, DEL) is shown as its
escape (`\\x1b`), so no such text can move the cursor, clear the screen, retitle the
window or write the clipboard (OSC 52)."""

from __future__ import annotations

import re

# C0 and C1 controls and DEL. Tab and newline are escaped too where a message must stay
# one line; `lines=True` keeps them for multi-line text (a model's answer on stdout).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe_text(text: str, lines: bool = False) -> str:
    """`text` with control characters shown as escapes (`\\x1b`; `\\n` unless `lines`)."""
    pattern = _CONTROL_BUT_LINES if lines else _CONTROL
    return pattern.sub(lambda m: repr(m.group())[1:-1], text)
