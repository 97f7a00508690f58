"""Tools for the inspector's tests: a large output (paged artifacts) and a slow step
(a run to follow live). $LWTOOL_UI_SLEEP sets the slow step's seconds."""

from __future__ import annotations

import os
import time
from typing import Any


def big(args: dict[str, Any]) -> dict[str, Any]:
    lines = [f"line {n:06d} of a large tool output" for n in range(int(args["lines"]))]
    return {"text": "\n".join(lines)}


def slow(args: dict[str, Any]) -> dict[str, Any]:
    time.sleep(float(os.environ.get("LWTOOL_UI_SLEEP", "0.5")))
    return {"n": args["n"]}


tools = {"big": big, "slow": slow}
