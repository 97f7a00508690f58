"""A hand-written MCP stdio server (JSON-RPC lines) that misbehaves as hostile or
broken servers do, chosen by RAW_MODE (comma-separated):

- `noise`: writes lines that are not JSON-RPC on stdout before answering;
- `twice`: lists the tool `echo` twice.

Its tools: `echo` (returns its input), `slow` (sleeps `seconds`), `die_once` (the first
call, marked in RAW_MARK, kills the server mid-call; later ones answer), `unfit`
(declares an outputSchema its structuredContent breaks), `env` (the values of the
environment variables `names` lists, null for one it does not have), `fetch` (GETs
`url`: its status, or the error)."""

from __future__ import annotations

import json
import os
import sys
import time

MODES = set(os.environ.get("RAW_MODE", "").split(","))
MARK = os.environ.get("RAW_MARK", "")
OBJECT = {"type": "object"}
TOOLS = [
    {"name": "echo", "inputSchema": OBJECT},
    {"name": "slow", "inputSchema": {"type": "object", "properties": {
        "seconds": {"type": "number"}}}},
    {"name": "die_once", "inputSchema": OBJECT},
    {"name": "env", "inputSchema": OBJECT},
    {"name": "fetch", "inputSchema": OBJECT},
    {"name": "unfit", "inputSchema": OBJECT, "outputSchema": {
        "type": "object", "required": ["score"],
        "properties": {"score": {"type": "integer"}}}},
]


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(args: dict[str, object], name: str) -> dict[str, object]:
    if name == "slow":
        time.sleep(float(args.get("seconds", 0)))  # type: ignore[arg-type]
    if name == "die_once" and MARK and not os.path.exists(MARK):
        open(MARK, "w").close()
        os._exit(9)
    if name == "fetch":  # through HTTP_PROXY when it is set, as clients do
        import urllib.request

        try:
            with urllib.request.urlopen(str(args["url"]), timeout=5) as answer:
                found: dict[str, object] = {"status": answer.status}
        except Exception as exc:  # noqa: BLE001 - told to the caller
            found = {"error": str(exc)}
        return {"content": [{"type": "text", "text": json.dumps(found)}],
                "structuredContent": found}
    if name == "env":
        found = {str(n): os.environ.get(str(n)) for n in args.get("names") or []}  # type: ignore[attr-defined]
        return {"content": [{"type": "text", "text": json.dumps(found)}],
                "structuredContent": found}
    if name == "unfit":
        return {"content": [], "structuredContent": {"score": "high"}}
    return {"content": [{"type": "text", "text": json.dumps(args)}],
            "structuredContent": args}


def main() -> None:
    if "noise" in MODES:
        print("starting up... (a log line on the wrong stream)", flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        method, rid = request.get("method"), request.get("id")
        if rid is None:
            continue
        if method == "initialize":
            answer: dict[str, object] = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}
        elif method == "tools/list":
            answer = {"tools": TOOLS + ([TOOLS[0]] if "twice" in MODES else [])}
        elif method == "tools/call":
            params = request["params"]
            answer = result(params.get("arguments") or {}, params["name"])
        else:
            answer = {}
        if "noise" in MODES:
            print("DEBUG handled " + str(method), flush=True)
        send({"jsonrpc": "2.0", "id": rid, "result": answer})


if __name__ == "__main__":
    main()
