"""A prompt holding a lone surrogate (text decoded with errors="surrogateescape": `sys.argv`,
file names that are not UTF-8) failed the run mid-way ("RunFailed: unexpected
UnicodeEncodeError", after a store failure): it is a clear error before any request now."""

from __future__ import annotations

import pytest

from loopwright import Agent, ConfigError
from loopwright.testing import FakeModelServer, Reply


@pytest.mark.parametrize("prompt", ["caf\udce9 au lait", ["look at this:", "\ud800"]])
async def test_a_prompt_with_a_lone_surrogate_is_refused_before_any_request(
        prompt: str | list[str]) -> None:
    with FakeModelServer([], strict=False) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k")
        with pytest.raises(ConfigError, match=r"lone surrogate \(U\+D[89C]..") as raised:
            await agent.run(prompt)
        assert "errors='replace'" in str(raised.value)
        assert not server.model_requests


@pytest.mark.parametrize("prompt", ["café au lait ✓ 😀 日本語", "plain ascii"])
async def test_any_real_text_goes_as_it_is(prompt: str) -> None:
    with FakeModelServer([Reply("ok")]) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k").run(prompt)
    assert result.output == "ok"
    assert server.model_requests[0].body["messages"][-1]["content"] == prompt
