"""Recall at run start ranked by embeddings from an OpenAI-compatible /v1/embeddings endpoint (the
fake server's), falling back to full-text search; recalled items are labelled as background."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Reply
from loopwright.testing._embeddings import bag_of_words

FAST = RetryPolicy(attempts=2, base_delay=0.01, jitter=0)
SYNONYMS = {"automobile": "car", "sound": "noise", "rattles": "noise"}


def by_meaning(text: str) -> list[float]:
    """Embeddings that know a few synonyms (the fake's default only matches equal words)."""
    return bag_of_words(" ".join(SYNONYMS.get(w, w) for w in text.lower().split()))


async def seed(server: FakeModelServer, store: str, prompts: list[str]) -> None:
    for prompt in prompts:
        async with Agent("m", base_url=server.base_url, api_key="k", store=store) as agent:
            await agent.run(prompt)


def recall_status(events: list[Event]) -> list[dict[str, Any]]:
    return [e.data for e in events if isinstance(e, StatusEvent) and e.kind == "recall"]


def first_request_text(server: FakeModelServer) -> str:
    return json.dumps(server.model_requests[-1].body)


async def test_embeddings_find_a_session_phrased_in_other_words(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    with FakeModelServer([Reply("ok")] * 3, embed=by_meaning) as server:
        await seed(server, store, ["How do I stop the car engine noise", "A good pasta recipe"])
        events: list[Event] = []
        async with Agent("m", base_url=server.base_url, api_key="k", store=store, recall=True,
                         embeddings_url=server.base_url, callbacks=[events.append]) as agent:
            await agent.run("my automobile rattles")
        sent = first_request_text(server)
        embedding_calls = [r for r in server.requests if r.path.endswith("/embeddings")]
    assert "car engine noise" in sent and "pasta" not in sent
    assert "background to verify" in sent
    assert recall_status(events)[-1]["ranking"] == "embeddings"
    assert embedding_calls and embedding_calls[0].body["input"][0] == "my automobile rattles"


async def test_without_embeddings_recall_is_full_text_and_misses_other_words(
        tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    with FakeModelServer([Reply("ok")] * 3) as server:
        await seed(server, store, ["How do I stop the car engine noise"])
        async with Agent("m", base_url=server.base_url, api_key="k", store=store,
                         recall=True) as agent:
            await agent.run("my automobile rattles")
            assert "car engine noise" not in first_request_text(server)
            await agent.run("the engine again")
            assert "car engine noise" in first_request_text(server)
        assert not [r for r in server.requests if r.path.endswith("/embeddings")]


async def test_a_dead_embeddings_endpoint_falls_back_to_full_text(tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    with FakeModelServer([Reply("ok")] * 2) as server:
        await seed(server, store, ["How do I stop the car engine noise"])
        events: list[Event] = []
        async with Agent("m", base_url=server.base_url, api_key="k", store=store, recall=True,
                         embeddings_url="http://127.0.0.1:9/v1",
                         callbacks=[events.append]) as agent:
            result = await agent.run("engine trouble")
        assert "car engine noise" in first_request_text(server)
    assert result.stop_reason == "completed"
    failed, used = recall_status(events)
    assert "embeddings endpoint" in failed["error"] and used["ranking"] == "full_text"


def test_the_fake_embeddings_route_answers_like_openai() -> None:
    import httpx

    with FakeModelServer() as server:
        reply = httpx.post(f"{server.base_url}/embeddings", json={"input": ["a b", "b c"]})
        bad = httpx.post(f"{server.base_url}/embeddings", json={"input": 3})
    data = reply.json()
    assert reply.status_code == 200 and [d["index"] for d in data["data"]] == [0, 1]
    assert len(data["data"][0]["embedding"]) == 256 and data["usage"]["prompt_tokens"] > 0
    assert bad.status_code == 400


async def _recall_with(tmp_path: Path, embed: Any) -> tuple[str, list[dict[str, Any]], Any]:
    store = str(tmp_path / "s.db")
    with FakeModelServer([Reply("ok")] * 2, embed=embed) as server:
        await seed(server, store, ["How do I stop the car engine noise"])
        events: list[Event] = []
        async with Agent("m", base_url=server.base_url, api_key="k", store=store, recall=True,
                         embeddings_url=server.base_url, callbacks=[events.append]) as agent:
            result = await agent.run("engine trouble")
        return first_request_text(server), recall_status(events), result


async def test_nan_vectors_fall_back_to_full_text(tmp_path: Path) -> None:
    sent, statuses, result = await _recall_with(tmp_path, lambda text: [float("nan")] * 8)
    assert result.stop_reason == "completed" and "car engine noise" in sent
    failed, used = statuses
    assert "not a finite number" in failed["error"] and used["ranking"] == "full_text"


async def test_huge_vectors_fall_back_to_full_text(tmp_path: Path) -> None:
    sent, statuses, result = await _recall_with(tmp_path, lambda text: [0.5] * 100_000)
    assert result.stop_reason == "completed" and "car engine noise" in sent
    failed, used = statuses
    assert "dimensions" in failed["error"] and used["ranking"] == "full_text"


async def test_an_embeddings_url_without_a_scheme_is_a_one_line_config_error(
        tmp_path: Path) -> None:
    import pytest

    from loopwright.errors import ConfigError

    with FakeModelServer([]) as server, \
            pytest.raises(ConfigError, match="embeddings_url 'not a url' has no scheme"):
        async with Agent("m", base_url=server.base_url, api_key="k", store=str(tmp_path / "s.db"),
                         recall=True, embeddings_url="not a url") as agent:
            await agent.run("engine trouble")
