"""Before the first request: check the provider (`preflight`) and describe the set-up in one line
(the banner `chat` prints); say what a protocol server started by hand in a terminal waits for."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright.config import check_model_prefix

if TYPE_CHECKING:
    from loopwright.agent import Agent
    from loopwright.endpoints.resolve import Resolved


async def check_provider(agent: Agent) -> Resolved:
    """The primary provider, after `preflight` found it usable (else `ConfigError`, exit 6)."""
    from loopwright.endpoints.probe import preflight

    check_model_prefix(agent.settings.model, agent.settings.base_url, named="--model")
    primary = (await agent.providers())[0]
    await preflight(primary)
    return primary


def banner(agent: Agent, primary: Resolved) -> str:
    """Model, endpoint, context window and where that number came from, workdir, sandbox and
    approval mode — one line."""
    settings = agent.settings
    parts = [f"{primary.model} at {primary.endpoint.shown_url} ({primary.provider}, "
             f"{primary.mode})"]
    if agent.windows:
        window = agent.windows[0]
        parts.append(f"context {window.tokens:,} ({window.source})")
    workdir = Path(settings.workdir).resolve() if settings.workdir else Path.cwd()
    parts.append(f"workdir {workdir}")
    if settings.approve_all:
        approvals = "approve all (--yes)"
    else:
        approvals = "ask" if agent.approval else "deny (no terminal to ask)"
    parts.append(f"sandbox {settings.sandbox_mode}, approvals {approvals}")
    return " · ".join(parts)


def make_agent(options: dict[str, Any], callbacks: list[Any]) -> Agent:
    """`Agent(**options)`; when its session store cannot be opened (an unwritable data
    directory, …) a warning and an agent without sessions, instead of no agent at all."""
    from loopwright.agent import Agent
    from loopwright.errors import SessionError

    try:
        agent = Agent(callbacks=callbacks, **options)
    except SessionError as exc:
        from loopwright.cli.render import say

        say(f"warning: {exc}; sessions are off for this run (set LOOPWRIGHT_DATA_DIR to a "
            "writable directory)")
        agent = Agent(callbacks=callbacks, **{**options, "store": False})
    check_model_prefix(agent.settings.model, agent.settings.base_url, named="--model")
    return agent


def note_when_started_by_hand(protocol: str, client: str) -> None:
    """On a terminal's stdin a protocol server (`acp`, `mcp-server`) waits in silence and answers
    the first line a person types with a parse error: say what it waits for."""
    import sys

    if sys.stdin.isatty():
        from loopwright.cli.render import say

        say(f"waiting for {protocol} messages on stdin: {client} starts this command and talks "
            "to it (docs/editors.md); typed lines are not prompts. Ctrl-D or Ctrl-C stops")
