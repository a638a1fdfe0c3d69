"""Kept for imports that predate `loopwright.tools.text_calls`, where the parsers now live."""

from loopwright.tools.text_calls import (
    ARGUMENT_KEYS,
    FORMAT_HINT,
    NAME_KEYS,
    MalformedCall,
    TextCalls,
    TextToolCall,
    parse_tool_calls,
)

__all__ = ["ARGUMENT_KEYS", "FORMAT_HINT", "NAME_KEYS", "MalformedCall", "TextCalls",
           "TextToolCall", "parse_tool_calls"]
