"""What the model reads of a tool's return value: text as it is, everything else as JSON."""

from __future__ import annotations

import datetime
import itertools
import uuid
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from loopwright import Agent, tool
from loopwright.testing import FakeModelServer, Reply, call


@dataclass
class Forecast:
    city: str
    day: datetime.date
    tags: set[str]


class Opaque:
    def __str__(self) -> str:
        return "an opaque thing"


@tool(read_only=True)
def lookup(kind: str) -> Any:
    """Return a value of the kind asked for."""
    values: dict[str, Any] = {
        "dataclass": Forecast("Lyon", datetime.date(2026, 11, 29), {"rain"}),
        "mixed": {"id": uuid.UUID(int=1), "at": datetime.datetime(2026, 11, 29, 1, 2, 3),
                  "path": PurePosixPath("/srv/a.txt"), "opaque": Opaque()},
        "text": "plain {not json}",
        "opaque": Opaque(),
        "endless": {"numbers": itertools.count(), "raw": [b"\xff"]},
    }
    return values[kind]


async def seen_by_the_model(tmp_path: Path, kind: str) -> str:
    script = [Reply(tool_calls=[call("lookup", {"kind": kind})]), Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[lookup],
                      cache_dir=str(tmp_path))
        result = await agent.run("look it up")
    assert result.stop_reason == "completed"
    messages = server.model_requests[1].body["messages"]
    [content] = [m["content"] for m in messages if m["role"] == "tool"]
    return str(content)


async def test_a_dataclass_result_is_json_not_its_repr(tmp_path: Path) -> None:
    """It was `"Forecast(city='Lyon', day=datetime.date(2026, 11, 29), tags={'rain'})"`."""
    assert await seen_by_the_model(tmp_path, "dataclass") == (
        '{"city": "Lyon", "day": "2026-11-29", "tags": ["rain"]}')


async def test_uuids_datetimes_and_paths_are_json_and_the_unknown_stays_its_text(
        tmp_path: Path) -> None:
    assert await seen_by_the_model(tmp_path, "mixed") == (
        '{"id": "00000000-0000-0000-0000-000000000001", "at": "2026-11-29T01:02:03", '
        '"path": "/srv/a.txt", "opaque": "an opaque thing"}')


async def test_text_is_passed_as_it_is_and_an_unknown_value_as_its_text(tmp_path: Path) -> None:
    assert await seen_by_the_model(tmp_path, "text") == "plain {not json}"
    assert await seen_by_the_model(tmp_path, "opaque") == '"an opaque thing"'


async def test_an_endless_iterator_and_bytes_that_are_not_utf8_stay_their_text(
        tmp_path: Path) -> None:
    """Read by pydantic, the iterator would never end (the run would hang on it)."""
    assert await seen_by_the_model(tmp_path, "endless") == (
        '{"numbers": "count(0)", "raw": ["b\'\\\\xff\'"]}')
