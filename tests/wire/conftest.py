"""Recorded provider traffic (tests/wire/recorded, see its README and MANIFEST) and a replayer that
pushes a recorded body through an adapter's own parsers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from loopwright.messages import ModelResponse
from loopwright.wire import get_wire_format
from loopwright.wire.sse import iter_sse
from loopwright.wire.stream import StreamAccumulator

RECORDED = Path(__file__).parent / "recorded"


@dataclass
class Replayed:
    """What a replayed stream produced: the response and every delta the listeners heard."""

    response: ModelResponse
    finished: bool
    text_deltas: list[str] = field(default_factory=list)
    reasoning_deltas: list[str] = field(default_factory=list)


Replay = Callable[[str, str], Awaitable[Replayed]]


def _load(name: str) -> Any:
    text = (RECORDED / name).read_text(encoding="utf-8")
    return yaml.safe_load(text) if name.endswith((".yaml", ".yml")) else text


@pytest.fixture
def recorded() -> Callable[[str], Any]:
    """Load a recording: YAML cassettes parsed, raw `.sse` bodies as text."""
    return _load


async def _chunks(body: bytes, size: int) -> AsyncIterator[bytes]:
    # odd-sized chunks split lines and multi-byte characters, as a real network does
    for start in range(0, len(body), size):
        yield body[start : start + size]


async def replay_sse(mode: str, body: str, chunk_size: int = 7) -> Replayed:
    wire = get_wire_format(mode)
    parser = wire.stream_parser()
    texts: list[str] = []
    reasonings: list[str] = []
    acc = StreamAccumulator(on_text=texts.append, on_reasoning=reasonings.append)
    async for event, data in iter_sse(_chunks(body.encode(), chunk_size)):
        parser.feed(event, data, acc)
        if parser.finished:
            break
    return Replayed(acc.build(), parser.finished, texts, reasonings)


@pytest.fixture
def replay() -> Replay:
    """`await replay(mode, sse_body)`: the body through the mode's stream parser + accumulator."""
    return replay_sse
