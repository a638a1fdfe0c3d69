"""A listener's own error during a streamed reply (the user's callback, the CLI's renderer,
serve's writer) is that error, not a "malformed stream event": it is not retried, and the run
fails naming it. Only the wire format's own decoding errors are the stream's fault."""

from __future__ import annotations

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent, TextDelta
from loopwright.testing import FakeModelServer, Reply
from raw_provider import raw_stream

FAST = RetryPolicy(base_delay=0.01, jitter=0)


class ListenerBug(ValueError):
    pass


def raising_on_text(events: list[Event]) -> object:
    def listen(event: Event) -> None:
        events.append(event)
        if isinstance(event, TextDelta):
            raise ListenerBug("the listener's own bug")
    return listen


async def test_a_listener_raising_value_error_fails_the_run_once_naming_it() -> None:
    events: list[Event] = []
    with FakeModelServer([Reply("hello there")], strict=False) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      callbacks=[raising_on_text(events)])
        result = await agent.run("go", raise_on_error=False)
        requests = len(server.model_requests)
    assert result.stop_reason == "error"
    assert isinstance(result.exception, ListenerBug)
    assert result.error == "unexpected ListenerBug: the listener's own bug"
    assert requests == 1  # not retried: the server did nothing wrong
    assert not [e for e in events if isinstance(e, StatusEvent) and e.kind == "retrying"]
    assert not any("malformed" in str(e) for e in events)


async def test_a_malformed_event_from_the_server_is_still_malformed_and_retried() -> None:
    events: list[Event] = []
    with raw_stream(b"{not json") as base_url:
        agent = Agent("m", base_url=base_url, api_key="k", callbacks=[events.append],
                      retry=RetryPolicy(base_delay=0.01, jitter=0, attempts=2))
        result = await agent.run("go", raise_on_error=False)
    retried = [e for e in events if isinstance(e, StatusEvent) and e.kind == "retrying"]
    assert retried and "malformed stream event" in retried[0].message
    assert result.stop_reason == "error"


async def test_a_listener_failing_on_the_held_back_end_of_a_reply_raises_as_itself() -> None:
    """The accumulator holds a reply's start while it may become a `<think>` tag and sends it
    when the stream ends, outside the parser: the listener's error came out as the wrapper."""
    def listener(event: Event) -> None:
        if isinstance(event, TextDelta):
            raise ListenerBug("the renderer broke")

    with FakeModelServer([Reply("<thi", chunk_size=2)]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", callbacks=[listener])
        result = await agent.run("hi", raise_on_error=False)
    assert result.stop_reason == "error"
    assert result.error is not None and "ListenerBug: the renderer broke" in result.error
    assert len(server.model_requests) == 1
