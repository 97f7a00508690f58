"""The CLI figure's tools (bench/runtime.py): `echo` as most users write a tool, a
plain function (run in the tool threads), and `aecho`, the same as a coroutine."""

from typing import Any


def echo(args: Any) -> Any:
    return {"value": str(args.get("value"))}


async def aecho(args: Any) -> Any:
    return {"value": str(args.get("value"))}


sync_tools = {"echo": echo}
async_tools = {"echo": aecho}
