"""MCP result content as model text (mcp/content.py), on the SDK's own result types."""

from __future__ import annotations

import base64

from mcp_types import AudioContent, CallToolResult, TextContent

from loopwright.mcp.content import format_size, result_text


def test_audio_becomes_a_placeholder_with_mime_type_and_size() -> None:
    data = base64.b64encode(b"\x00" * 2048).decode()
    result = CallToolResult(content=[TextContent(text="Listen:"),
                                     AudioContent(data=data, mime_type="audio/wav")])
    expected = "Listen:\n[audio: audio/wav, 2.0 KB; the binary data is not shown]"
    assert result_text(result) == expected


def test_structured_content_is_shown_when_there_is_no_content_block() -> None:
    result = CallToolResult(content=[], structured_content={"temperature": 21, "unit": "C"})
    assert result_text(result) == '{"temperature": 21, "unit": "C"}'


def test_sizes_read_naturally() -> None:
    assert [format_size(n) for n in (0, 1023, 1536, 3 * 1024 * 1024)] == [
        "0 B", "1023 B", "1.5 KB", "3.0 MB"]
