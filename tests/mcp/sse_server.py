"""A bare streamable-HTTP MCP server on 127.0.0.1 that answers every request as a server-sent
event (the SDK's server answers these calls with JSON bodies): enough of the handshake-era
protocol for a client to list and call its one tool, `big`, which answers `megabytes` of text.
Run in a thread by `serving()`."""

from __future__ import annotations

import contextlib
import http.server
import json
from collections.abc import Iterator
from typing import Any

from shared_helpers import http_server

BIG = {"name": "big", "description": "That many megabytes of text.",
       "inputSchema": {"type": "object", "properties": {"megabytes": {"type": "number"}}}}


def answer(request: dict[str, Any]) -> dict[str, Any]:
    method, params = request["method"], request.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "sse", "version": "1"}}
    if method == "tools/list":
        return {"tools": [BIG]}
    if method == "tools/call":
        size = int(float(params["arguments"]["megabytes"]) * 1024 * 1024)
        return {"content": [{"type": "text", "text": "x" * size}]}
    return {}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if "id" not in request:  # a notification
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if request["method"] == "server/discover":  # not a modern server: the handshake, then
            reply: dict[str, Any] = {"error": {"code": -32601, "message": "no such method"}}
        else:
            reply = {"result": answer(request)}
        data = json.dumps({"jsonrpc": "2.0", "id": request["id"], **reply})
        event = f"event: message\ndata: {data}\n\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(event)))
        self.end_headers()
        self.wfile.write(event)

    def do_GET(self) -> None:  # no stream of its own for notifications
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """The server in a thread; its MCP endpoint URL."""
    with http_server(Handler) as root:
        yield f"{root}/mcp"
