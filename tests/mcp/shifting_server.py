"""An MCP server (the SDK's MCPServer, over stdio) whose one tool's schema and whose
own version come from the environment, as a server's upgrade looks to lwtool:
SHIFT_VERSION is the version it gives itself, SHIFT_SCHEMA=2 adds an input field."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("shifting", version=os.environ.get("SHIFT_VERSION", "1.0"))

if os.environ.get("SHIFT_SCHEMA") == "2":
    @server.tool()
    def double(n: int, note: str = "") -> dict[str, int]:
        """Twice n."""
        return {"n": n * 2}
else:
    @server.tool()
    def double(n: int) -> dict[str, int]:
        """Twice n."""
        return {"n": n * 2}

if __name__ == "__main__":
    server.run()
