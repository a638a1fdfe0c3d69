"""Tool calls written as text, in the shapes local models and servers really produce.

Used twice: in prompt mode (`tool_call_format="prompt"`, models without native tools) and as a
fallback in native mode, where local servers often return a call as text even though native
tools were sent. One module per family; `registry` runs them in order (explicit markup first,
so bare JSON only sees what is left and nothing is found twice) and tells the streaming
holdback (`holdback`) where calls may start.

Families: Hermes / Qwen2.5 / Granite-3.1 `<tool_call>{…}</tool_call>`; Qwen3-Coder
`<function=name><parameter=k>v</parameter>`; GLM-4.5+ `<tool_call>name<arg_key>k</arg_key>
<arg_value>v</arg_value>`; Phi / Granite-3.0 `<|tool_call|>[…]`; Llama 3.1 `<function=name>{…}`
and `<|python_tag|>{…}`; Mistral `[TOOL_CALLS]`; pythonic `[f(a=1)]` (Llama 3.2 / 4);
gpt-oss harmony `<|channel|>commentary to=functions.name`; DeepSeek `<｜tool▁calls▁begin｜>`;
Kimi-K2 `<|tool_calls_section_begin|>`; bare or fenced JSON (Llama 3, llama.cpp's
`{"tool_call": {…}}`), and a call wrapped in `<tool_response>` by a confused small model.

Arguments are returned as text, exactly as written when they are not valid JSON, so that the
executor repairs and validates them like native arguments (`loopwright.arguments`); XML-style values
are text until `coerce_arguments` gives them the types of the tool's schema.
"""

from loopwright.wire.text_calls.coerce import coerce_arguments
from loopwright.wire.text_calls.holdback import MarkupFilter
from loopwright.wire.text_calls.model import MalformedCall, TextCalls, TextToolCall
from loopwright.wire.text_calls.objects import ARGUMENT_KEYS, NAME_KEYS
from loopwright.wire.text_calls.registry import could_be_call_prefix, parse_tool_calls

FORMAT_HINT = '<tool_call>\n{"name": "<tool name>", "arguments": {<arguments>}}\n</tool_call>'

__all__ = [
    "ARGUMENT_KEYS",
    "FORMAT_HINT",
    "NAME_KEYS",
    "MalformedCall",
    "MarkupFilter",
    "TextCalls",
    "TextToolCall",
    "coerce_arguments",
    "could_be_call_prefix",
    "parse_tool_calls",
]
