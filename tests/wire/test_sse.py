"""The Server-Sent Events reader (`wire/sse.py`): line endings, comments, multi-line data, events
cut anywhere by the network, and very large events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

import pytest

from loopwright.wire.sse import iter_sse

Event = tuple[str | None, str]


async def chunks_of(parts: Iterable[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def parse(*parts: bytes) -> list[Event]:
    return [event async for event in iter_sse(chunks_of(parts))]


STREAM = (b": keep-alive\n"
          b"event: message_start\n"
          b"data: {\"a\": 1}\n"
          b"\n"
          b"id: 7\n"
          b"retry: 100\n"
          b"data: first line\n"
          b"data:second line\n"
          b"data: \n"
          b"\n"
          b"data: [DONE]\n"
          b"\n")
EXPECTED: list[Event] = [("message_start", '{"a": 1}'), (None, "first line\nsecond line\n"),
                         (None, "[DONE]")]


async def test_comments_ids_and_retries_are_ignored_and_data_lines_are_joined() -> None:
    assert await parse(STREAM) == EXPECTED


async def test_crlf_line_endings_parse_like_lf() -> None:
    assert await parse(STREAM.replace(b"\n", b"\r\n")) == EXPECTED


async def test_an_event_cut_at_any_byte_gives_the_same_events() -> None:
    crlf = STREAM.replace(b"\n", b"\r\n")
    for stream in (STREAM, crlf):
        for cut in range(1, len(stream)):
            assert await parse(stream[:cut], stream[cut:]) == EXPECTED, (stream, cut)
        assert await parse(*(stream[i:i + 1] for i in range(len(stream)))) == EXPECTED


async def test_multibyte_utf8_cut_between_chunks_is_decoded_whole() -> None:
    stream = "data: héllo ✓ 🙂\n\n".encode()
    for cut in range(1, len(stream)):
        assert await parse(stream[:cut], stream[cut:]) == [(None, "héllo ✓ 🙂")]


async def test_a_final_event_without_its_blank_line_is_still_delivered() -> None:
    assert await parse(b"data: a\n\ndata: tail") == [(None, "a"), (None, "tail")]
    assert await parse(b"data: a\r\n\r\ndata: tail\r") == [(None, "a"), (None, "tail")]


async def test_blank_lines_without_data_yield_nothing() -> None:
    assert await parse(b"\n\n: only a comment\n\nevent: ping\n\n") == []


@pytest.mark.parametrize("size", [1 << 16, 1 << 20])
async def test_a_five_megabyte_event_arrives_whole(size: int) -> None:
    payload = b"x" * (5 << 20)
    stream = b"data: " + payload + b"\n\ndata: next\n\n"
    parts = [stream[i:i + size] for i in range(0, len(stream), size)]
    events = await parse(*parts)
    assert [len(data) for _, data in events] == [len(payload), 4]
    assert events[1] == (None, "next")


async def test_lone_cr_line_endings_parse_like_lf() -> None:
    # the SSE spec allows CR, LF and CRLF line ends; a server using bare CR must still parse
    stream = STREAM.replace(b"\n", b"\r")
    assert await parse(stream) == EXPECTED
    for cut in range(1, len(stream)):
        assert await parse(stream[:cut], stream[cut:]) == EXPECTED, cut
