"""A small MCP server over streamable HTTP on 127.0.0.1, run as a subprocess by the tests.

Usage: python tests/mcp/http_server.py PORT [json]

With `json` it answers each request with one JSON body, not an event stream.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations

server = MCPServer("http-test-server")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@server.tool()
def whoami(ctx: Context) -> str:
    """The Authorization header this request arrived with."""
    headers = ctx.headers or {}
    return headers.get("authorization", "(none)")


@server.tool(name="get.user")
def get_user_dotted() -> str:
    """A name a provider refuses as it is (the dot)."""
    return "from get.user"


@server.tool(name="get_user")
def get_user_plain() -> str:
    """The name the dotted one reads as once cleaned."""
    return "from get_user"


@server.tool(name="lookup_" + "x" * 60 + "_first")
def long_first() -> str:
    """One of two names alike in their first 64 characters."""
    return "first"


@server.tool(name="lookup_" + "x" * 60 + "_second")
def long_second() -> str:
    """The other."""
    return "second"


@server.tool()
def big(megabytes: float) -> str:
    """That many megabytes of text."""
    return "x" * int(megabytes * 1024 * 1024)


@server.tool()
def explode() -> str:
    """Fail with a JSON-RPC error rather than an error result."""
    raise MCPError(-32050, "the reactor is offline")


@server.tool()
def grumble() -> str:
    """Fail inside the tool: the server reports an error result."""
    raise ValueError("not today")


if __name__ == "__main__":
    server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]),
               json_response=sys.argv[2:] == ["json"])
