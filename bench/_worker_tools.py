"""The workers benchmark's tools: a 5 ms nap, and `echo` (the chain's trivial step)."""

import time


def nap(args: dict) -> dict:
    time.sleep(0.005)
    return {"ok": True}


async def echo(args: dict) -> dict:
    return {"value": str(args.get("value"))}


tools = {"nap": nap, "echo": echo}
