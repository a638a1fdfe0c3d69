"""What a server lists at `/v1/models` belongs to the key that asked: two agents on one base URL
with different keys never see each other's model list or window, and a key the server refuses
is told so, not shown what another key can see (the short listing cache is kept per URL and
credentials, issue 31)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopwright import Agent
from loopwright.endpoints.probe import preflight
from loopwright.endpoints.servers import fetch_listing
from loopwright.errors import ConfigError
from loopwright.testing import FakeModelServer, Reply
from loopwright.testing._http import HttpRequest, Send, response_bytes

# what each key may see: its own model, with its own window (vLLM lists it on /v1/models)
SEEN_BY_KEY = {"alpha-key": ("alpha-model", 6_000), "beta-key": ("beta-model", 9_000)}


class PerKeyServer(FakeModelServer):
    """The fake model server, whose `/v1/models` lists what the request's key may see and
    refuses a key it does not know (HTTP 401), as a gateway in front of several tenants does."""

    listed = 0

    def _answer(self, request: HttpRequest) -> Send | Any:
        if request.path.rstrip("/") != "/v1/models":
            return super()._answer(request)
        self.listed += 1
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        seen = SEEN_BY_KEY.get(key)
        if seen is None:
            body = {"error": {"message": "invalid api key", "type": "invalid_request_error"}}
            return Send(response_bytes(401, json.dumps(body).encode(), keep_alive=False))
        model, window = seen
        listing = {"object": "list", "data": [
            {"id": model, "object": "model", "owned_by": "vllm", "max_model_len": window}]}
        return Send(response_bytes(200, json.dumps(listing).encode(), keep_alive=False))


def agent_for(server: FakeModelServer, key: str, model: str | None = "any") -> Agent:
    return Agent(model, base_url=server.base_url, api_key=key, cache_dir=None)


async def test_two_keys_on_one_url_each_get_their_own_window() -> None:
    with PerKeyServer() as server:
        alpha = await agent_for(server, "alpha-key", "alpha-model").context_windows()
        beta = await agent_for(server, "beta-key", "beta-model").context_windows()
    assert [(w.tokens, w.source) for w in alpha] == [(6_000, "probe:/v1/models")]
    assert [(w.tokens, w.source) for w in beta] == [(9_000, "probe:/v1/models")]


async def test_a_key_the_server_refuses_is_told_so_after_another_key_listed() -> None:
    with PerKeyServer() as server:
        await agent_for(server, "alpha-key", "alpha-model").context_windows()
        wrong = agent_for(server, "wrong-key", "alpha-model")
        with pytest.raises(ConfigError, match="refused the API key"):
            await preflight((await wrong.providers())[0])
        windows = await wrong.context_windows()
    # nothing it may see tells its window: the default, not the other key's 6,000
    assert [w.source for w in windows] == ["default"]


async def test_the_same_key_reuses_the_listing_seconds_later() -> None:
    with PerKeyServer() as server:
        headers = {"authorization": "Bearer alpha-key"}
        first = await fetch_listing(server.base_url, headers=headers)
        again = await fetch_listing(server.base_url, headers=dict(headers))
    assert first is again and server.listed == 1


async def test_a_server_without_a_model_named_lists_with_the_agents_own_key() -> None:
    with PerKeyServer([Reply("hi")]) as server:
        agent = agent_for(server, "beta-key", model=None)
        result = await agent.run("hello")
        sent = server.model_requests[0].body or {}
    assert result.output == "hi"
    assert sent["model"] == "beta-model"


async def test_the_cache_holds_no_credential() -> None:
    from loopwright.endpoints import servers

    with PerKeyServer() as server:
        listing = await fetch_listing(server.base_url + "?api_key=url-secret",
                                      headers={"authorization": "Bearer alpha-key"})
    assert listing.ids == ["alpha-model"]
    kept = repr(vars(servers))
    assert "alpha-key" not in kept and "url-secret" not in kept


async def test_a_server_named_in_the_environment_lists_with_the_environments_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with PerKeyServer([Reply("hi")]) as server:
        monkeypatch.setenv("LOOPWRIGHT_BASE_URL", server.base_url)
        monkeypatch.setenv("LOOPWRIGHT_API_KEY", "alpha-key")
        monkeypatch.delenv("LOOPWRIGHT_MODEL", raising=False)
        result = await Agent(cache_dir=None).run("hello")
        sent = server.model_requests[0].body or {}
    assert (result.output, sent["model"]) == ("hi", "alpha-model")


class KeyedLlamaCpp(FakeModelServer):
    """llama.cpp started with `--api-key alpha-key`: every endpoint but the model listing asks
    for it (HTTP 401 otherwise)."""

    listed = 0

    def _answer(self, request: HttpRequest) -> Send | Any:
        if request.path.rstrip("/") == "/v1/models":
            self.listed += 1
        elif request.headers.get("authorization") != "Bearer alpha-key":
            body = {"error": {"code": 401, "message": "Invalid API Key",
                              "type": "authentication_error"}}
            return Send(response_bytes(401, json.dumps(body).encode(), keep_alive=False))
        return super()._answer(request)


async def test_a_refused_key_does_not_make_the_server_forgotten() -> None:
    with KeyedLlamaCpp(context_window=6_000, flavor="llamacpp", model="m") as server:
        first = await agent_for(server, "alpha-key", "m").context_windows()
        refused = await agent_for(server, "wrong-key", "m").context_windows()
        again = await agent_for(server, "alpha-key", "m").context_windows()
    assert [w.tokens for w in first] == [w.tokens for w in again] == [6_000]
    assert [w.source for w in refused] == ["default"]  # not the other key's window
    # the kind stayed known to the first key (asked once, by its first agent); the refused key
    # found it out for itself (a kind is per key: one URL may route keys to other servers)
    assert server.listed == 2


# what a gateway in front of several backends (LiteLLM-style key routing) lists to each key:
# one key reaches a vLLM server running open weights, the other a hosted model behind the
# same alias; `gateway-model` is a name no profile knows, so the server's kind decides
# whether calls written in a reply's text are read as calls
ROUTED_BY_KEY = {
    "local-key": {"id": "gateway-model", "object": "model", "owned_by": "vllm",
                  "max_model_len": 8_000},
    "hosted-key": {"id": "gateway-model", "object": "model", "owned_by": "openai"},
}
TEXT_CALL = '<tool_call>{"name": "note", "arguments": {"text": "ran"}}</tool_call>'


class RoutingGateway(FakeModelServer):
    """The fake model server behind a gateway that lists to each key the backend it routes
    that key to (`ROUTED_BY_KEY`), and refuses a key it does not know (HTTP 401)."""

    def _answer(self, request: HttpRequest) -> Send | Any:
        if request.path.rstrip("/") != "/v1/models":
            return super()._answer(request)
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        entry = ROUTED_BY_KEY.get(key)
        if entry is None:
            body = {"error": {"message": "invalid api key", "type": "invalid_request_error"}}
            return Send(response_bytes(401, json.dumps(body).encode(), keep_alive=False))
        listing = {"object": "list", "data": [entry]}
        return Send(response_bytes(200, json.dumps(listing).encode(), keep_alive=False))


def routed_agent(server: FakeModelServer, key: str, ran: list[str], **kwargs: Any) -> Agent:
    from loopwright import tool

    @tool
    def note(text: str) -> str:
        """Note a text."""
        ran.append(f"{key}: {text}")
        return "noted"

    return Agent("gateway-model", base_url=server.base_url, api_key=key, cache_dir=None,
                 tools=[note], **kwargs)


async def test_a_kind_learned_with_one_key_is_not_another_keys() -> None:
    ran: list[str] = []
    with RoutingGateway([Reply("hi"), Reply(TEXT_CALL)]) as server:
        await routed_agent(server, "local-key", ran).run("hello")  # learns: vLLM, for it
        # its window given, the hosted key's run asks the server nothing before its call
        hosted = await routed_agent(server, "hosted-key", ran, context_window=32_000).run("x")
    assert (hosted.output, hosted.turns, ran) == (TEXT_CALL, 1, [])


@pytest.mark.parametrize("key", ["hosted-key", "unknown-key"])
async def test_a_key_that_never_listed_inherits_no_kind(key: str) -> None:
    ran: list[str] = []
    with RoutingGateway([Reply("hi"), Reply(TEXT_CALL)]) as server:
        await routed_agent(server, "local-key", ran).run("hello")
        other = await routed_agent(server, key, ran).run("x")
    assert (other.output, ran) == (TEXT_CALL, [])


async def test_a_keys_own_kind_survives_another_key_listing() -> None:
    ran: list[str] = []
    script = [Reply("hi"), Reply("hi"), Reply(TEXT_CALL), Reply("done")]
    with RoutingGateway(script) as server:
        await routed_agent(server, "local-key", ran).run("hello")
        await routed_agent(server, "hosted-key", ran).run("hello")  # lists: a hosted model
        local = await routed_agent(server, "local-key", ran).run("x")
    assert (local.output, ran) == ("done", ["local-key: ran"])
