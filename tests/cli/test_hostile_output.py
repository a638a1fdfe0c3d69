"""Whatever a model or a tool sends, `--json` prints one valid JSON line per event with nothing a
terminal would obey, and a pipe or a terminal gets it inert (no escape sequence of theirs acts)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from shared_helpers import cli_env, http_server


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
            chunks = [head + b'[{"index":0,"delta":{"content":' + content + b'}}]}\n\n'
                      for content in contents]
            chunks.append(head + b'[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')
            body = b"".join(chunks) + b"data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with http_server(Handler) as root:
        yield root + "/v1"


def _run(base_url: str, cwd: Path, *flags: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "loopwright", "run", "Say it", "--model", "m", "--base-url",
         base_url, *flags], cwd=cwd, env=cli_env(cwd), capture_output=True, timeout=60)


def test_json_lines_escape_c1_controls_lone_surrogates_and_line_separators(
        tmp_path: Path) -> None:
    with raw_stream(rb'"lone \ud800 "', rb'"csi \u009b2J nul \u0000 "', rb'"sep \u2028 end"'
                    ) as base_url:
        proc = _run(base_url, tmp_path, "--json")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]  # every line valid
    text = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert text == "lone \ud800 csi \x9b2J nul \x00 sep \u2028 end"  # was "lone ? …": lost
    assert "\x9b".encode() not in proc.stdout  # was written raw: a CSI to a C1 terminal
    assert "\u2028".encode() not in proc.stdout


def test_a_pipe_gets_such_an_answer_inert(tmp_path: Path) -> None:
    with raw_stream(rb'"csi \u009b2J nul \u0000 osc \u001b]0;title\u0007 lone \ud800"'
                    ) as base_url:
        proc = _run(base_url, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"csi \\x9b2J nul \\x00 osc \\x1b]0;title\\x07 lone ?\n"
