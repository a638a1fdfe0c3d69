"""Whether a reply's text is read as tool calls hangs, for a model no profile knows, on the kind
of server its key reaches (`review.plan.text_call_reader`): one gateway URL may route one key to
a vLLM server and another to a hosted model. The kind is looked up per reply, with the
digest of the endpoint's credentials kept per endpoint; a key refreshed in place, or another
agent's key on the same URL, must never reuse the kind another key found."""

from __future__ import annotations

import json
from typing import Any

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.endpoints.servers import fetch_listing
from loopwright.testing import FakeModelServer, Fault, Reply
from loopwright.testing._http import HttpRequest, Send, response_bytes

FAST = RetryPolicy(base_delay=0.01, jitter=0)
LOCAL_KEY, HOSTED_KEY = "local-key", "hosted-key"
# the owner each key's listing names: vLLM behind one, a hosted API behind the other
OWNER_BY_KEY = {LOCAL_KEY: "vllm", HOSTED_KEY: "openai"}
TEXT_CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


class RoutingGateway(FakeModelServer):
    """The fake model server whose `/v1/models` tells each key the server it routes that key
    to, as LiteLLM's key routing does."""

    def _answer(self, request: HttpRequest) -> Any:
        if request.path.rstrip("/") != "/v1/models":
            return super()._answer(request)
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        entry = {"id": "house-model", "object": "model", "owned_by": OWNER_BY_KEY[key]}
        if key == LOCAL_KEY:
            entry["max_model_len"] = 8_192  # (vLLM's window: nothing else asked)
        listing = json.dumps({"object": "list", "data": [entry]}).encode()
        return Send(response_bytes(200, listing, keep_alive=False))


@tool(read_only=True)
def get_weather(city: str) -> str:
    """Weather for a city."""
    calls.append(city)
    return f"{city}: sunny"


calls: list[str] = []


def agent_for(server: FakeModelServer, key: str, **kwargs: Any) -> Agent:
    return Agent("house-model", base_url=server.base_url, api_key=key, retry=FAST,
                 tools=[get_weather], cache_dir=None, **kwargs)


async def kinds_known(server: FakeModelServer) -> None:
    for key in (LOCAL_KEY, HOSTED_KEY):
        listing = await fetch_listing(server.base_url, headers={"authorization": f"Bearer {key}"})
        assert listing.kind == ("vllm" if key == LOCAL_KEY else "openai_compatible")


async def test_a_key_refreshed_mid_run_has_its_own_kind_looked_up() -> None:
    """The same client, its key changed in place on its endpoint (refreshed after a 401): the
    replies after it are read by the new key's kind, not the one the old key found."""
    calls.clear()

    async def refreshed(_client: Any) -> str:
        return HOSTED_KEY

    script = [Reply(TEXT_CALL), Fault.status(401), Reply(TEXT_CALL)]
    with RoutingGateway(replies=script) as server:
        await kinds_known(server)
        agent = agent_for(server, LOCAL_KEY, refresh_credentials=refreshed)
        result = await agent.run("weather?")
    # vLLM's reply had its call run; the hosted model's, after the key changed, is text
    assert calls == ["Paris"]
    assert result.output == TEXT_CALL
    assert [r.headers.get("authorization") for r in server.model_requests] == [
        f"Bearer {LOCAL_KEY}", f"Bearer {LOCAL_KEY}", f"Bearer {HOSTED_KEY}"]


async def test_two_agents_on_one_url_with_different_keys_each_have_their_kind() -> None:
    calls.clear()
    with RoutingGateway(replies=[Reply(TEXT_CALL), Reply("Sunny."), Reply(TEXT_CALL)]) as server:
        await kinds_known(server)
        local = await agent_for(server, LOCAL_KEY).run("weather?")
        hosted = await agent_for(server, HOSTED_KEY).run("weather?")
    assert (local.output, hosted.output, calls) == ("Sunny.", TEXT_CALL, ["Paris"])

