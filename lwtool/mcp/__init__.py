"""MCP: tools from Model Context Protocol servers (`--tools servers.json`, the
`mcpServers` file MCP clients share), through the official `mcp` SDK (`pip install
'lwtool[mcp]'`; imported only when a tools file names MCP servers)."""
