"""A strict, independent SSE reader for checking what the fake server sends."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SseEvent:
    event: str | None
    data: str

    @property
    def json(self) -> Any:
        return json.loads(self.data)


def parse_sse(text: str) -> list[SseEvent]:
    """Split a complete SSE body into events; fails on anything but `event:`/`data:` lines."""
    assert text.endswith("\n\n"), f"SSE body must end with a blank line: {text[-40:]!r}"
    events = []
    for block in text[:-2].split("\n\n"):
        name: str | None = None
        data_lines = []
        for line in block.split("\n"):
            field, sep, value = line.partition(": ")
            assert sep, f"malformed SSE line {line!r}"
            assert field in ("event", "data"), f"unexpected SSE field {field!r}"
            if field == "event":
                assert name is None, "two event lines in one event"
                name = value
            else:
                data_lines.append(value)
        assert data_lines, f"event without data: {block!r}"
        events.append(SseEvent(name, "\n".join(data_lines)))
    return events


def chat_chunks(text: str) -> list[dict[str, Any]]:
    """The JSON chunks of a Chat Completions stream, checking it ends with `data: [DONE]`."""
    events = parse_sse(text)
    assert all(e.event is None for e in events), "chat streams carry no event names"
    assert events[-1].data == "[DONE]"
    assert all(e.data != "[DONE]" for e in events[:-1])
    return [e.json for e in events[:-1]]


def named_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(name, payload) of an Anthropic or Responses stream, checking name == payload type."""
    out = []
    for event in parse_sse(text):
        assert event.event is not None, "every event is named in this format"
        payload = event.json
        assert payload["type"] == event.event, f"event {event.event!r} carries {payload['type']!r}"
        out.append((event.event, payload))
    return out
