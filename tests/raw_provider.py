"""A provider that writes its stream byte for byte as the test says: for what the fake model
server cannot send because Python cannot encode it (a lone surrogate's `"\\ud800"` escape)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler

from shared_helpers import http_server


@contextmanager
def raw_stream(*contents: bytes) -> Iterator[str]:
    """A chat-completions server whose one streamed reply carries `contents` as its text
    deltas, each already a JSON string literal as the provider wrote it (the fake model server
    writes what Python can encode; a provider may send `"\\ud800"`, a lone surrogate). Its
    base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            head = b'data: {"id":"r","object":"chat.completion.chunk","model":"m","choices":'
            chunks = [head + b'[{"index":0,"delta":{"content":' + content
                      + b'},"finish_reason":null}]}\n\n' for content in contents]
            chunks.append(head + b'[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')
            body = b"".join(chunks) + b"data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with http_server(Handler) as root:
        yield root + "/v1"
