"""The workers benchmark's tool: a 5 ms nap."""

import time


def nap(args: dict) -> dict:
    time.sleep(0.005)
    return {"ok": True}


tools = {"nap": nap}
