"""The per-run catalogue (DESIGN §5): turn-1 router, hide map, deferred tools and `tool_search`,
through `Agent` against the fake model server."""

from __future__ import annotations

from typing import Any

from loopwright import Agent, Tool, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.catalogue import AUTO_MAX_ADVERTISED, choose_deferred

FAST = RetryPolicy(base_delay=0.01, jitter=0)
ran: list[str] = []


@tool(read_only=True, tags={"math"})
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append("add")
    return a + b


@tool(read_only=True, tags={"notes"})
def read_note(title: str) -> str:
    """Read a note by its title."""
    ran.append("read_note")
    return f"note {title}"


@tool(read_only=True, core=True)
def echo(text: str) -> str:
    """Repeat the text."""
    return text


@tool
def secret(code: str) -> str:
    """Launch something dangerous."""
    ran.append("secret")
    return "launched"


@tool(read_only=True, deferred=True, tags={"weather"})
def get_forecast(city: str) -> str:
    """Weather forecast for a city."""
    ran.append("get_forecast")
    return f"sunny in {city}"


@tool(read_only=True, deferred=True, tags={"finance"})
def stock_price(symbol: str) -> float:
    """Latest stock price for a ticker symbol."""
    return 1.5


def make_agent(server: FakeModelServer, tools: list[Tool], **kwargs: Any) -> Agent:
    return Agent("test-model", base_url=server.base_url, api_key="k", tools=tools, retry=FAST,
                 **kwargs)


def offered(server: FakeModelServer, n: int) -> list[str]:
    body = server.model_requests[n].body
    return [t["function"]["name"] for t in body.get("tools", [])]


def results(events: list[Event]) -> list[ToolResultEvent]:
    return [e for e in events if isinstance(e, ToolResultEvent)]


async def test_router_offers_matching_tags_and_core_tools_on_turn_one_only() -> None:
    script = [Reply(tool_calls=[call("add", {"a": 1, "b": 2})]), Reply("3")]
    with FakeModelServer(replies=script) as server:
        agent = make_agent(server, [add, read_note, echo], allowed_tool_tags=["math"])
        result = await agent.run("1+2?")
    assert result.output == "3"
    assert offered(server, 0) == ["add", "echo"]
    assert offered(server, 1) == ["add", "read_note", "echo"]


async def test_hidden_tools_are_never_offered_and_a_call_gets_an_error_not_a_run() -> None:
    ran.clear()
    events: list[Event] = []
    script = [Reply(tool_calls=[call("secret", {"code": "x"})]), Reply("ok")]
    with FakeModelServer(replies=script) as server:
        agent = make_agent(server, [add, read_note, secret], hidden_tools=["secret"],
                           callbacks=[events.append])
        result = await agent.run("launch")
    assert result.stop_reason == "completed"
    assert "secret" not in offered(server, 0) and "secret" not in offered(server, 1)
    assert "secret" not in ran
    (outcome,) = results(events)
    assert outcome.is_error
    assert "no tool named 'secret'" in outcome.content
    assert "add" in outcome.content and "read_note" in outcome.content


async def test_a_misspelled_tool_gets_the_closest_real_names_first() -> None:
    events: list[Event] = []
    script = [Reply(tool_calls=[call("read_notes", {"title": "x"})]), Reply("ok")]
    with FakeModelServer(replies=script) as server:
        agent = make_agent(server, [add, echo, read_note], callbacks=[events.append])
        await agent.run("read it")
    (outcome,) = results(events)
    assert outcome.is_error
    assert outcome.content.split("Tools you can call: ")[1].startswith("read_note")


async def test_deferred_tools_load_through_tool_search_and_are_appended_next_turn() -> None:
    ran.clear()
    events: list[Event] = []
    script = [
        Reply(tool_calls=[call("tool_search", {"query": "weather forecast"})]),
        Reply(tool_calls=[call("get_forecast", {"city": "Oslo"})]),
        Reply("Sunny."),
    ]
    with FakeModelServer(replies=script) as server:
        agent = make_agent(server, [add, get_forecast, stock_price, echo],
                           callbacks=[events.append])
        result = await agent.run("weather in Oslo?")
    assert result.output == "Sunny."
    assert offered(server, 0) == ["add", "echo", "tool_search"]
    # the prefix stays; the activated tool is appended with its full schema
    assert offered(server, 1) == ["add", "echo", "tool_search", "get_forecast"]
    forecast = server.model_requests[1].body["tools"][3]["function"]
    assert forecast["parameters"]["required"] == ["city"]
    search_result, forecast_result = results(events)
    assert "get_forecast" in search_result.content and "stock_price" not in search_result.content
    assert forecast_result.content == "sunny in Oslo" and ran == ["get_forecast"]
    search_tool = server.model_requests[0].body["tools"][2]["function"]
    assert "get_forecast" in search_tool["description"]


async def test_a_search_with_no_match_lists_what_can_be_loaded() -> None:
    events: list[Event] = []
    script = [Reply(tool_calls=[call("tool_search", {"query": "zebra"})]), Reply("none")]
    with FakeModelServer(replies=script) as server:
        await make_agent(server, [add, get_forecast], callbacks=[events.append]).run("x")
    (outcome,) = results(events)
    assert "No tool matches 'zebra'" in outcome.content and "get_forecast" in outcome.content
    assert offered(server, 1) == ["add", "tool_search"]


async def test_calling_a_deferred_tool_by_name_activates_and_runs_it() -> None:
    ran.clear()
    script = [Reply(tool_calls=[call("get_forecast", {"city": "Rome"})]), Reply("done")]
    with FakeModelServer(replies=script) as server:
        await make_agent(server, [add, get_forecast]).run("weather?")
    assert ran == ["get_forecast"]
    assert offered(server, 1) == ["add", "tool_search", "get_forecast"]


async def test_activation_lasts_one_run() -> None:
    script = [Reply(tool_calls=[call("tool_search", {"query": "select:stock_price"})]),
              Reply("one"), Reply("two")]
    with FakeModelServer(replies=script) as server:
        agent = make_agent(server, [add, stock_price])
        await agent.run("first")
        await agent.run("second")
    assert offered(server, 1) == ["add", "tool_search", "stock_price"]
    assert offered(server, 2) == ["add", "tool_search"]


async def test_deferred_tools_setting_all_keeps_core_tools_and_a_list_names_tools() -> None:
    script = [Reply("a"), Reply("b")]
    with FakeModelServer(replies=script) as server:
        await make_agent(server, [add, echo, read_note], deferred_tools="all").run("x")
        await make_agent(server, [add, echo, read_note], deferred_tools=["read_note"]).run("y")
    assert offered(server, 0) == ["echo", "tool_search"]
    assert offered(server, 1) == ["add", "echo", "tool_search"]


async def test_auto_defers_the_heavy_tools_on_a_local_provider() -> None:
    def make(n: int) -> Tool:
        def fn(text: str) -> str:
            return text

        fn.__name__ = f"tool_{n:02d}"
        fn.__doc__ = "Do a thing. " + "Long details. " * (n * 10)
        return tool(fn)

    many = [make(n) for n in range(20)]
    with FakeModelServer(replies=[Reply("ok")]) as server:  # 127.0.0.1: a local provider
        await make_agent(server, [*many, echo], deferred_tools="auto").run("x")
    names = offered(server, 0)
    assert len(names) <= AUTO_MAX_ADVERTISED + 1 and names[-1] == "tool_search"
    assert "echo" in names and "tool_00" in names and "tool_19" not in names
    assert choose_deferred(many, "auto", local=False) == set()


async def test_strict_tools_sends_strict_schemas() -> None:
    @tool
    def greet(name: str, greeting: str = "Hello") -> str:
        """Greet someone."""
        return f"{greeting}, {name}"

    script = [Reply(tool_calls=[call("greet", {"name": "Ann", "greeting": None})]), Reply("ok")]
    events: list[Event] = []
    with FakeModelServer(replies=script) as server:
        await make_agent(server, [greet], strict_tools=True, callbacks=[events.append]).run("x")
    function = server.model_requests[0].body["tools"][0]["function"]
    assert function["strict"] is True
    assert function["parameters"]["required"] == ["name", "greeting"]
    assert results(events)[0].content == "Hello, Ann"  # null means "use the default"
