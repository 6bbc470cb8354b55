"""MCP servers as tools, through the official `mcp` SDK (loaded only when a server is configured)."""
