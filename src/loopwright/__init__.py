"""loopwright: a fast, robust runtime for LLM agent loops.

The public names are imported on first use (module `__getattr__`), so that `import loopwright`
and the CLI's start-up do not pay for the whole runtime (MCP, compaction, wire formats, httpx).
"""

import sys

# `python -m loopwright` puts the working directory (a project a command may have written to)
# first on the module path, so a `typing.py` or `httpx.py` there would run as part of loopwright,
# outside any sandbox. This package is found by now; the directory leaves the path before
# anything else is imported — which is also why this module has no `from __future__` import: it
# imports a module of that name. (A `loopwright/` folder there is found before this package:
# `python -P -m loopwright` or the `loopwright` command avoid even that.)
if (sys.argv[:1] == ["-m"] and not sys.flags.safe_path and sys.path
        and any(flag == "-m" and name.partition(".")[0] == "loopwright"
                for flag, name in zip(sys.orig_argv, sys.orig_argv[1:], strict=False))):
    import os  # imported by Python's start-up already: nothing is read from the directory

    if sys.path[0] in ("", os.getcwd()):  # not for `python -m yourapp`, which imports us
        del sys.path[0]

import importlib
from typing import TYPE_CHECKING, Any

# httpx imports its own command line (rich, click, pygments: a fifth of our import time) whenever
# those are installed; nothing here runs httpx's CLI, and without its module httpx falls back to a
# stub `httpx.main` that says how to install it
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None blocks an import

if TYPE_CHECKING:
    from loopwright.agent import Agent, RunHandle
    from loopwright.attachments import Attachment, document, image
    from loopwright.errors import (
        AuthError,
        ConfigError,
        LoopwrightError,
        OutputValidationError,
        ProviderError,
        RunFailed,
        ToolError,
        UsageLimitExceeded,
    )
    from loopwright.events import (
        Event,
        ModelCallRecord,
        event_from_dict,
        event_to_dict,
        event_to_json,
    )
    from loopwright.messages import Message, ModelRequest, ToolCall, Usage
    from loopwright.plugins import LoopPlugin, RunView
    from loopwright.result import RunResult
    from loopwright.settings import UsageLimits
    from loopwright.tools.base import Tool, ToolContext, tool

_HOMES = {
    "Agent": "loopwright.agent",
    "RunHandle": "loopwright.agent",
    "AuthError": "loopwright.errors",
    "ConfigError": "loopwright.errors",
    "LoopwrightError": "loopwright.errors",
    "ProviderError": "loopwright.errors",
    "ToolError": "loopwright.errors",
    "OutputValidationError": "loopwright.errors",
    "RunFailed": "loopwright.errors",
    "UsageLimitExceeded": "loopwright.errors",
    "UsageLimits": "loopwright.settings",
    "Attachment": "loopwright.attachments",
    "image": "loopwright.attachments",
    "document": "loopwright.attachments",
    "Event": "loopwright.events",
    "event_from_dict": "loopwright.events",
    "event_to_dict": "loopwright.events",
    "event_to_json": "loopwright.events",
    "Message": "loopwright.messages",
    "ModelRequest": "loopwright.messages",
    "ModelCallRecord": "loopwright.events",
    "ToolCall": "loopwright.messages",
    "Usage": "loopwright.messages",
    "LoopPlugin": "loopwright.plugins",
    "RunView": "loopwright.plugins",
    "RunResult": "loopwright.result",
    "Tool": "loopwright.tools.base",
    "ToolContext": "loopwright.tools.base",
    "tool": "loopwright.tools.base",
}

__all__ = [
    "Agent",
    "Attachment",
    "AuthError",
    "ConfigError",
    "Event",
    "LoopPlugin",
    "LoopwrightError",
    "Message",
    "ModelCallRecord",
    "ModelRequest",
    "OutputValidationError",
    "ProviderError",
    "RunFailed",
    "RunHandle",
    "RunResult",
    "RunView",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "Usage",
    "UsageLimitExceeded",
    "UsageLimits",
    "document",
    "event_from_dict",
    "event_to_dict",
    "event_to_json",
    "image",
    "tool",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'loopwright' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
