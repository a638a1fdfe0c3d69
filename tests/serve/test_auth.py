"""The token on every API route, the page's files open without it, the token file, the refusal to
listen beyond loopback without a token, and the OpenAPI description matching the routes."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from serve_helpers import TOKEN, MakeServer
from starlette.routing import Route

from loopwright.errors import ConfigError
from loopwright.serve.api import RUN_FIELDS
from loopwright.serve.auth import server_token, token_path
from loopwright.serve.openapi import PATHS
from loopwright.testing import FakeModelServer


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "abc", path)


PAGE_FILES = [("GET", "/"), ("GET", "/docs"), ("GET", "/openapi.json"),
              *(("GET", f"/static/{name}") for name in ("app.js", "style.css", "index.html"))]


def test_every_route_but_the_pages_files_refuses_a_request_without_the_right_token(
        make_server: MakeServer) -> None:
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        routes = [(method.upper(), _concrete(path)) for path, methods in PATHS.items()
                  for method in methods if (method.upper(), path) not in PAGE_FILES] + [
            ("GET", "/no/such/route"), ("GET", "/static/../serve/app.py"),  # nothing to probe
            ("OPTIONS", "/runs"), ("DELETE", "/runs/abc"), ("POST", "/"),
            ("POST", "/static/app.js"), ("GET", "/?token=" + TOKEN)]
        right = served.api
        anonymous = httpx.Client(base_url=served.url, timeout=10)
        wrong = served.client(token="wrong-token-0123456789")
        for method, path in routes:
            for client in (anonymous, wrong):
                response = client.request(method, path, json={})
                if path.startswith("/?token"):  # the old link: the page, and no login
                    assert response.status_code == 200 and "set-cookie" not in response.headers
                    continue
                assert response.status_code == 401, (method, path, response.text)
                assert "token" in response.json()["error"]
                assert response.headers["www-authenticate"].startswith("Bearer")
        for method, path in PAGE_FILES:  # the package's own files: nothing of the user's
            page = anonymous.request(method, path)
            assert page.status_code == 200, path
            assert TOKEN not in page.text
        for method, path in routes:  # the right token gets past the check
            with right.stream(method, path, json={}) as response:  # /runs/news never ends
                assert response.status_code != 401, (method, path)
        anonymous.close()


def test_no_response_sets_a_cookie_and_old_login_cookies_are_deleted(
        make_server: MakeServer) -> None:
    # versions before the fragment link kept the token in a cookie every port of the host got
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        port = served.url.rsplit(":", 1)[1]
        old = {f"loopwright_token_{port}": TOKEN, "loopwright_token_9": TOKEN, "prefs": "x"}
        browser = httpx.Client(base_url=served.url, timeout=10, cookies=old)
        assert browser.get("/sessions").status_code == 401  # the cookie opens nothing
        page = browser.get("/")
        assert page.status_code == 200
        assert sorted(page.headers.get_list("set-cookie")) == sorted([
            "loopwright_token_9=; Max-Age=0; Path=/",
            f"loopwright_token_{port}=; Max-Age=0; Path=/"])
        browser.cookies.clear()
        assert "set-cookie" not in browser.get("/").headers  # nothing to delete: nothing set
        assert "set-cookie" not in served.api.get("/health").headers
        browser.close()


def test_the_openapi_description_lists_exactly_the_routes(make_server: MakeServer) -> None:
    with FakeModelServer([]) as fake:
        served = make_server(fake)
        routes = {(method, re.sub(r":\w+}", "}", route.path))  # {call_id:path}: {call_id}
                  for route in served.app.app.routes if isinstance(route, Route)
                  for method in route.methods or () if method != "HEAD"}
        document = served.api.get("/openapi.json").json()
        docs = served.api.get("/docs").text
    described = {(method.upper(), path) for path, methods in document["paths"].items()
                 for method in methods}
    assert described == routes
    assert document["openapi"].startswith("3.")
    assert all(path in docs for _, path in routes)
    start = document["paths"]["/runs"]["post"]["requestBody"]["content"]["application/json"]
    assert set(start["schema"]["properties"]) == set(RUN_FIELDS)  # what POST /runs accepts
    assert "not available" not in json.dumps(start)  # output_type is, now


def test_the_token_is_generated_once_kept_private_and_required_beyond_loopback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPWRIGHT_SERVE_TOKEN", raising=False)
    with pytest.raises(ConfigError, match=r"refusing to listen on 0\.0\.0\.0 without a token"):
        server_token("0.0.0.0")
    assert not token_path().exists()
    token, created = server_token("127.0.0.1")
    assert created and len(token) >= 32
    assert stat.S_IMODE(token_path().stat().st_mode) == 0o600
    assert server_token("127.0.0.1") == (token, False)
    assert server_token("0.0.0.0") == (token, False)  # the kept token counts as configured
    assert server_token("::", explicit="given-token-0123456789") == ("given-token-0123456789",
                                                                      False)
    monkeypatch.setenv("LOOPWRIGHT_SERVE_TOKEN", "from-env-0123456789ab")
    assert server_token("10.0.0.1")[0] == "from-env-0123456789ab"
    with pytest.raises(ConfigError, match="at least 16"):
        server_token("127.0.0.1", explicit="short")


def test_a_token_file_other_users_can_read_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOOPWRIGHT_SERVE_TOKEN", raising=False)
    token, _ = server_token("127.0.0.1")
    token_path().chmod(0o644)
    with pytest.raises(ConfigError, match=r"can be read by other users \(mode 0644\): run chmod"):
        server_token("127.0.0.1")
    token_path().chmod(0o600)
    assert server_token("127.0.0.1") == (token, False)


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "loopwright", "serve", *args],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env={**os.environ, **(env or {})})


def test_loopwright_serve_prints_its_link_and_refuses_a_public_address_without_token(
        tmp_path: Path) -> None:
    refused = _serve("--host", "0.0.0.0", "--port", "0")
    _, err = refused.communicate(timeout=60)
    assert refused.returncode == 6
    assert "refusing to listen on 0.0.0.0 without a token" in err

    with FakeModelServer([]) as fake:
        server = _serve("--port", "0", "--model", "gpt-4o-mini", "--base-url", fake.base_url,
                        "--api-key", "test", "--workdir", str(tmp_path))
        try:
            assert server.stderr is not None
            lines = []
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                lines.append(server.stderr.readline())
                if "serving on" in lines[-1]:
                    break
            assert any("new server token written to" in line for line in lines), lines
            assert not any("warning" in line for line in lines), lines  # the model works
            match = re.search(r"serving on (http://127\.0\.0\.1:\d+/)#token=(\S+)", lines[-1])
            assert match, lines
            url, token = match.groups()
            assert token == token_path().read_text().strip()
            assert httpx.get(url + "health").status_code == 401
            health = httpx.get(url + "health", headers={"authorization": f"Bearer {token}"})
            assert health.status_code == 200 and health.json()["status"] == "ok"
        finally:
            server.send_signal(signal.SIGINT)
            server.wait(30)
    assert server.returncode == 0


@pytest.mark.parametrize("where", ["taken", "not ours"])
def test_an_address_serve_cannot_listen_on_is_one_line_not_a_traceback(tmp_path: Path,
                                                                       where: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken, FakeModelServer([]) as fake:
        host, port = (("127.0.0.1", taken.getsockname()[1]) if where == "taken"
                      else ("192.0.2.1", 8765))  # TEST-NET-1: no interface of this machine has it
        server = _serve("--host", host, "--port", str(port), "--token", "t" * 32, "--model",
                        "m", "--base-url", fake.base_url, "--api-key", "test")
        _, err = server.communicate(timeout=60)
    assert server.returncode == 1
    reason = "address already in use" if where == "taken" else "cannot assign requested address"
    assert err == (f"loopwright: cannot listen on {host}:{port}: {reason}; pass --host and "
                   "--port with an address of this machine that is free (--port 0: any)\n")


def test_a_default_model_that_cannot_work_is_a_warning_at_start(tmp_path: Path) -> None:
    """As `run` and `chat` say before their first request, but the server still starts: a run
    may name a model of its own, and a model server may come up after this one."""
    from shared_helpers import cli_env

    server = subprocess.Popen(
        [sys.executable, "-m", "loopwright", "serve", "--port", "0", "--model",
         "anthropic:claude-sonnet-4-5", "--token", "t" * 32], cwd=tmp_path,
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=cli_env(tmp_path))
    try:
        assert server.stderr is not None
        lines = [server.stderr.readline() for _ in range(2)]
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)
    assert lines[0] == ("loopwright: warning: no API key for anthropic: set ANTHROPIC_API_KEY (or "
                        "LOOPWRIGHT_API_KEY), or pass --api-key; a run that names no model of "
                        "its own will fail until it is fixed\n")
    assert lines[1].startswith("loopwright: serving on http://127.0.0.1:")


def test_two_servers_starting_at_once_share_the_token_one_of_them_wrote(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the interleaving of two first starts: both find no token file, the other one writes it
    # first; this one must use that token, not crash on the existing file
    monkeypatch.delenv("LOOPWRIGHT_SERVE_TOKEN", raising=False)
    import loopwright.serve.auth as auth

    read = auth._read_token_file
    calls: list[int] = []

    def other_server_writes_between() -> str | None:
        calls.append(1)
        if len(calls) == 1:
            token_path().parent.mkdir(parents=True, exist_ok=True)
            token_path().write_text("written-by-the-other-0123456789\n")
            token_path().chmod(0o600)  # as the other server's first start leaves it
            return None  # what this process saw just before
        return read()

    monkeypatch.setattr(auth, "_read_token_file", other_server_writes_between)
    assert server_token("127.0.0.1") == ("written-by-the-other-0123456789", False)
