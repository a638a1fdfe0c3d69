"""Wire-format adapters: one per API mode. They know JSON shapes and nothing else."""

from loopwright.wire.base import StreamParser, WireFormat

__all__ = ["StreamParser", "WireFormat", "get_wire_format"]


def get_wire_format(mode: str) -> WireFormat:
    """The adapter for an API mode name."""
    if mode == "chat_completions":
        from loopwright.wire.chat_completions import ChatCompletionsFormat

        return ChatCompletionsFormat()
    if mode == "anthropic_messages":
        from loopwright.wire.anthropic_messages import AnthropicMessagesFormat

        return AnthropicMessagesFormat()
    if mode == "responses":
        from loopwright.wire.responses import ResponsesFormat

        return ResponsesFormat()
    from loopwright.errors import ConfigError

    raise ConfigError(
        f"unknown api_mode {mode!r}: use 'chat_completions', 'responses' or 'anthropic_messages'"
    )
