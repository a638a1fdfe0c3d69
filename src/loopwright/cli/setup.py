"""Before the first request: check the provider (`preflight`) and describe the set-up in one line
(the banner `chat` prints); say what a protocol server started by hand in a terminal waits for."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loopwright.agent import Agent
    from loopwright.endpoints.resolve import Resolved


async def check_provider(agent: Agent) -> Resolved:
    """The primary provider, after `preflight` found it usable (else `ConfigError`, exit 6)."""
    from loopwright.endpoints.probe import preflight

    check_model_prefix(agent.settings.model, agent.settings.base_url)
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
    check_model_prefix(agent.settings.model, agent.settings.base_url)
    return agent


def check_model_prefix(model: str | None, base_url: str | None) -> None:
    """A `provider:model` whose provider is misspelt (`anthorpic:claude-x`) is a `ConfigError`
    that names the provider meant, not a request to the default provider without its key.
    Only a near spelling counts (one typo, two in a long name), and never a prefix with a digit:
    `llama3:8b` and `qwen2.5:7b` are a model and its tag."""
    from loopwright.endpoints.resolve import PROVIDERS
    from loopwright.errors import ConfigError

    prefix, sep, rest = (model or "").partition(":")
    typed = prefix.lower()
    if (not sep or not rest or base_url or typed in PROVIDERS
            or any(char.isdigit() for char in typed)):
        return
    meant = [name for name in PROVIDERS
             if _typos(typed, name) <= (2 if len(name) >= 8 else 1)]
    if meant:
        raise ConfigError(f"unknown provider {prefix!r} in --model {model}: did you mean "
                          f"{meant[0]}:{rest}? (known providers: {', '.join(PROVIDERS)})")


def _typos(a: str, b: str) -> int:
    """Edits from `a` to `b`: a letter added, dropped, changed, or two swapped."""
    rows = [list(range(len(b) + 1))]
    for i, char_a in enumerate(a, start=1):
        row = [i]
        for j, char_b in enumerate(b, start=1):
            cost = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (char_a != char_b))
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                cost = min(cost, rows[-2][j - 2] + 1)
            row.append(cost)
        rows.append(row)
    return rows[-1][-1]


def note_when_started_by_hand(protocol: str, client: str) -> None:
    """On a terminal's stdin a protocol server (`acp`, `mcp-server`) waits in silence and answers
    the first line a person types with a parse error: say what it waits for."""
    import sys

    if sys.stdin.isatty():
        from loopwright.cli.render import say

        say(f"waiting for {protocol} messages on stdin: {client} starts this command and talks "
            "to it (docs/editors.md); typed lines are not prompts. Ctrl-D or Ctrl-C stops")
