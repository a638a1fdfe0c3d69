"""Recall ranked by real embeddings: llama.cpp's server serving `/v1/embeddings` (mean-pooled)
from the 0.5B GGUF the smoke test uses, through the real HTTP stack."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from loopwright import Agent
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Reply
from loopwright.testing.llamacpp import LlamaCppServer
from shared_helpers import require_component, small_model_weights

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(600)]

MODEL_PATH, AVAILABLE = small_model_weights()
HOW = ("recall by real embeddings needs llama.cpp and the 0.5B weights: pip install -e "
       "'.[llamacpp]' && python -m loopwright.testing.llamacpp fetch")


@pytest.fixture(scope="module")
def embeddings_server() -> Iterator[LlamaCppServer]:
    require_component(AVAILABLE, HOW)
    with LlamaCppServer(MODEL_PATH, ctx_size=2048, embeddings=True) as server:
        yield server


async def test_a_paraphrased_session_ranks_first_by_llamacpp_embeddings(
        embeddings_server: LlamaCppServer, tmp_path: Path) -> None:
    store = str(tmp_path / "s.db")
    with FakeModelServer([Reply("ok")] * 3) as model:
        for prompt in ("Best chocolate cake recipe", "How do I fix my car engine?"):
            async with Agent("m", base_url=model.base_url, api_key="k", store=store) as agent:
                await agent.run(prompt)
        events: list[Event] = []
        async with Agent("m", base_url=model.base_url, api_key="k", store=store, recall=True,
                         embeddings_url=embeddings_server.base_url,
                         callbacks=[events.append]) as agent:
            await agent.run("how can I repair a car engine")
        sent = json.dumps(model.model_requests[-1].body)
    recall = [e.data for e in events if isinstance(e, StatusEvent) and e.kind == "recall"]
    assert recall[-1]["ranking"] == "embeddings", recall
    assert "fix my car engine" in sent
    if "chocolate" in sent:  # a chat model's pooled vectors are all somewhat alike: order counts
        assert sent.index("fix my car engine") < sent.index("chocolate")
