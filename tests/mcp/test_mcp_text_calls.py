"""A Qwen3-Coder XML call to a real MCP tool: its text values are converted to the types of the
tool's JSON schema (`"5"` for a number used to fail validation), in native and prompt mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopwright import Agent
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply

FAST = RetryPolicy(base_delay=0.01, jitter=0)
XML_CALL = ("<tool_call>\n<function=mcp__ev__get-sum>\n<parameter=a>\n5\n</parameter>\n"
            "<parameter=b>\n7\n</parameter>\n</function>\n</tool_call>")


@pytest.mark.parametrize("tool_call_format", ["native", "prompt"])
async def test_a_qwen3_coder_call_to_an_mcp_tool_gets_typed_values(
        everything: str, tmp_path: Path, tool_call_format: str) -> None:
    with FakeModelServer(replies=[Reply(XML_CALL), Reply("12")]) as server:
        async with Agent("qwen3-coder", base_url=server.base_url, api_key="k", retry=FAST,
                         mcp_servers={"ev": {"command": "node", "args": [everything]}},
                         cache_dir=str(tmp_path / "cache"),
                         tool_call_format=tool_call_format) as agent:
            result = await agent.run("5+7?")
    assert result.output == "12"
    results = [m for m in result.messages if m.role == "tool"]
    assert len(results) == 1 and not results[0].is_error
    assert "12" in results[0].content
