"""MCP support: connect to MCP servers (stdio or streamable HTTP) and use their tools.

The `mcp` SDK is imported only when a server is actually connected, so `import loopwright` stays
fast for agents without MCP servers.
"""

from loopwright.mcp.client import MCPConnection, MCPManager, MCPServerError, MCPToolsPlugin
from loopwright.mcp.config import MCPServerConfig, parse_servers, tool_name

__all__ = [
    "MCPConnection",
    "MCPManager",
    "MCPServerConfig",
    "MCPServerError",
    "MCPToolsPlugin",
    "parse_servers",
    "tool_name",
]
