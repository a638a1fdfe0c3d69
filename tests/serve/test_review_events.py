"""Issue 28: a review verdict reaches an SSE client as an ordinary `review` event."""

from __future__ import annotations

from serve_helpers import MakeServer

from loopwright.testing import FakeModelServer, Reply, call


def test_a_review_event_is_streamed_over_sse(make_server: MakeServer) -> None:
    twice = [call("list_dir", {"path": "."}), call("list_dir", {"path": "."})]
    with FakeModelServer([Reply(tool_calls=twice), Reply("empty")]) as fake:
        served = make_server(fake)
        started = served.start("list the files")
        events = [event for _, event in served.events(started["run_id"])]
    [review] = [e for e in events if e["type"] == "review"]
    assert (review["check"], review["verdict"]) == ("duplicate_calls", "skip_call")
    assert review["budget_left"] == 2 and review["applied"] is True
