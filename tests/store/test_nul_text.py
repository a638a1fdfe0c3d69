"""NUL in what a run stores: a prompt, a reply, a tool's result (a binary file `cat`ed) and a
session's title. PostgreSQL's text refuses NUL; the run goes on in both stores, and the
session is read back with the text as it was."""

from __future__ import annotations

from typing import Any

from loopwright import Agent, tool
from loopwright.store import open_store
from loopwright.testing import Reply, call, fake_server


@tool(read_only=True)
def dump(path: str) -> str:
    """Show a file's bytes as text."""
    return "ELF\x00\x00\x01 binary"


async def _stored(store_spec: str, session_id: str) -> Any:
    store = open_store(store_spec)
    assert store is not None
    try:
        return await store.load(session_id)
    finally:
        await store.aclose()


async def test_nul_in_prompt_reply_and_result_is_stored(store_spec: str) -> None:
    with fake_server(Reply(tool_calls=[call("dump", {"path": "a.out"})]),
                     Reply("it holds \x00 bytes")) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", store=store_spec,
                      tools=[dump], raise_on_error=False)
        result = await agent.run("what is in a.out\x00?")
    assert result.stop_reason == "completed", result.error
    assert result.output == "it holds \x00 bytes"
    messages = await _stored(store_spec, result.session_id)
    assert [m.content for m in messages if m.role == "user"] == ["what is in a.out\x00?"]
    assert any(m.content == "ELF\x00\x00\x01 binary" for m in messages if m.role == "tool")


async def test_a_listing_filter_holding_nul_finds_nothing_and_raises_nothing(
        store_spec: str) -> None:
    """`GET /sessions?model=%00` on serve was a 503: PostgreSQL refused the filter's NUL."""
    store = open_store(store_spec)
    assert store is not None
    try:
        await store.create("s1", model="m", cwd="/w", title="hi")
        assert await store.list_sessions(model="\x00") == []
        assert await store.list_sessions(cwd="/w\x00") == []
        assert [s.id for s in await store.list_sessions(model="m")] == ["s1"]
    finally:
        await store.aclose()
