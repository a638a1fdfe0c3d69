"""`run` and `chat` check the provider before the first request and fail in one line, exit 6,
with the fix — instead of retrying for 20 s and exiting 1 (issue 16, "setup that explains
itself")."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from loopwright.testing import FakeModelServer, Reply
from shared_helpers import REFUSED_URL, cli_env, http_server


def loopwright(*args: str, cwd: Path, stdin: str = "", **env: str
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=cwd,
                          env=cli_env(cwd, **env), input=stdin, capture_output=True, text=True,
                          timeout=60)


class _TwoModels(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"data": [{"id": "qwen2.5:7b"}, {"id": "llama3.1:8b"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def two_model_server() -> Iterator[str]:
    with http_server(_TwoModels) as root:
        yield f"{root}/v1"


def only_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 6, proc.stderr
    assert proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    return line


def test_a_hosted_provider_without_its_key_exits_6_naming_the_variable(tmp_path: Path) -> None:
    proc = loopwright("run", "Hi", "--model", "anthropic:claude-sonnet-4-5", cwd=tmp_path)
    assert only_line(proc) == ("loopwright: no API key for anthropic: set ANTHROPIC_API_KEY "
                               "(or LOOPWRIGHT_API_KEY), or pass --api-key")


def test_a_base_url_where_nothing_answers_exits_6(tmp_path: Path) -> None:
    proc = loopwright("run", "Hi", "--model", "m", "--base-url", REFUSED_URL, cwd=tmp_path)
    line = only_line(proc)
    assert line.startswith(f"loopwright: nothing answers at {REFUSED_URL} (")
    assert line.endswith("start the server, or pass --base-url with its address")


def test_a_model_the_server_does_not_list_exits_6_with_what_it_serves(
        tmp_path: Path, two_model_server: str) -> None:
    proc = loopwright("run", "Hi", "--model", "qwen3", "--base-url", two_model_server,
                      cwd=tmp_path)
    assert only_line(proc) == (f"loopwright: model 'qwen3' is not served at {two_model_server}; "
                               "it serves qwen2.5:7b, llama3.1:8b: pass --model with one of them")


def test_chat_checks_the_provider_before_reading_a_prompt(tmp_path: Path) -> None:
    proc = loopwright("chat", "--model", "m", "--base-url", REFUSED_URL, cwd=tmp_path,
                      stdin="Hi\n")
    assert only_line(proc).startswith(f"loopwright: nothing answers at {REFUSED_URL}")


def test_chat_starts_with_a_one_line_banner(tmp_path: Path) -> None:
    with FakeModelServer([Reply("hello")], context_window=16384) as server:
        url = server.base_url
        proc = loopwright("chat", "--model", "fake-model", "--base-url", url, cwd=tmp_path,
                          stdin="Hi\n")
    assert proc.returncode == 0, proc.stderr
    banner = proc.stderr.splitlines()[0]
    assert banner == (f"loopwright chat · fake-model at {url} (custom, "
                      f"chat_completions) · context 16,384 (probe:/v1/models) · workdir "
                      f"{tmp_path.resolve()} · sandbox workspace-write, approvals deny (no "
                      "terminal to ask) · /help")


def test_an_unwritable_data_directory_warns_and_runs_without_sessions(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data directory should be")
    with FakeModelServer([Reply("still answered")]) as server:
        proc = loopwright("run", "Hi", "--model", "fake-model", "--base-url", server.base_url,
                          cwd=tmp_path, LOOPWRIGHT_DATA_DIR=str(blocker / "data"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "still answered\n"
    (warning,) = proc.stderr.strip().splitlines()
    assert warning.startswith("loopwright: warning: cannot create the session directory ")
    assert warning.endswith("sessions are off for this run (set LOOPWRIGHT_DATA_DIR to a "
                            "writable directory)")


def test_run_asks_a_local_server_what_it_is_once_before_its_first_request(
        tmp_path: Path) -> None:
    """Issue 31: six requests went out before the first model call (four window probes, and
    `/v1/models` twice: the probe and the check); now one listing tells the kind of server and
    serves the check, then that server's own window endpoint."""
    with FakeModelServer([Reply("hello")], context_window=16384, flavor="llamacpp") as server:
        proc = loopwright("run", "--model", "fake-model", "--base-url", server.base_url, "hi",
                          cwd=tmp_path)
        before_the_call = [r.path for r in server.requests if r.format is None]
    assert proc.returncode == 0, proc.stderr
    assert before_the_call == ["/v1/models", "/props"]


MISSPELT = ("unknown provider 'anthorpic' in --model anthorpic:claude-x: did you mean "
            "anthropic:claude-x? (known providers: openai, anthropic, openrouter, ollama, "
            "lmstudio, llamacpp, vllm)")


@pytest.mark.parametrize("command", ["acp", "mcp-server"])
def test_a_misspelt_provider_stops_the_protocol_servers_as_it_stops_run(tmp_path: Path,
                                                                        command: str) -> None:
    """They said "no API key for openai" at the first prompt or call: the wrong provider."""
    proc = loopwright(command, "--model", "anthorpic:claude-x", cwd=tmp_path)
    assert only_line(proc) == f"loopwright: {MISSPELT}"


def test_a_misspelt_provider_is_named_in_serves_warning(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "loopwright", "serve", "--port", "0", "--model",
         "anthorpic:claude-x", "--token", "t" * 32], cwd=tmp_path, stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL, text=True, env=cli_env(tmp_path))
    try:
        assert server.stderr is not None
        warning = server.stderr.readline()
    finally:
        server.terminate()
        server.wait(30)
    assert warning.startswith(f"loopwright: warning: {MISSPELT}; a run that names no model")
