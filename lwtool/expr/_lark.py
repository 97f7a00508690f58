"""Import lark without its optional `regex` probe.

lark imports the third-party `regex` module at import time whenever it is installed
(litellm brings it), although lwtool never asks lark for it (`regex=False`). Hiding it
for the duration of lark's own import saves ~10 ms on every cold `lwtool validate`;
it is restored at once, so any later `import regex` works as usual.
"""

from __future__ import annotations

import sys


def import_lark() -> None:
    if "lark" in sys.modules:
        return
    hidden = "regex" not in sys.modules
    if hidden:
        sys.modules["regex"] = None  # type: ignore[assignment]
    try:
        import lark  # noqa: F401
    finally:
        if hidden:
            del sys.modules["regex"]
