"""loopwright: a fast, robust runtime for LLM agent loops."""

from loopwright.agent import Agent, RunHandle
from loopwright.errors import (
    AuthError,
    ConfigError,
    LoopwrightError,
    ProviderError,
    ToolError,
)
from loopwright.events import Event, event_from_dict, event_to_dict, event_to_json
from loopwright.messages import Message, ToolCall, Usage
from loopwright.plugins import LoopPlugin
from loopwright.result import RunResult
from loopwright.tools.base import Tool, ToolContext, tool

__all__ = [
    "Agent",
    "AuthError",
    "ConfigError",
    "Event",
    "LoopPlugin",
    "LoopwrightError",
    "Message",
    "ProviderError",
    "RunHandle",
    "RunResult",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "Usage",
    "event_from_dict",
    "event_to_dict",
    "event_to_json",
    "tool",
]

__version__ = "0.1.0"
