"""What a check reads: a narrow, read-only view of one reply and its context."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright.messages import Message, ToolCall

if TYPE_CHECKING:
    from loopwright.tools.execute import PreparedCall, ToolOutcome


async def _no_opening() -> str:
    return ""


@dataclass(frozen=True, kw_only=True, slots=True)
class ReviewView:
    """One reply as the checks see it.

    `answer`: the final text (answer stage; "" for calls). `raw`: the reply's text as the model
    wrote it, before any plugin took call markup out of it. `calls`: the reply's calls that no
    earlier check has stopped; `reply_calls`: all of them. `tools`: the names offered, with
    `schema_of` for their parameters. `request`: the user's request. `history`: the
    conversation, the reply last. `tools_off`: the reply was asked for without tools.
    `truncated`: the reply was cut by the output limit (its last call is a fragment).
    `unreadable`: what was wrong with call markup in the text that could not be read.
    `budget_left`: the extra model calls the review stage may still cause in this run.
    `call_opening`: how a native call begins in the model's chat template, when the server
    continues a reply begun for the model ("" otherwise; asked only when needed: it may ask the
    server what it is). `prepare`: the executor's preparation of a call (its tool and validated
    arguments, or the error that answers it), once per call of the reply; None where there is
    no executor (an answer)."""

    answer: str = ""
    raw: str = ""
    calls: Sequence[ToolCall] = ()
    reply_calls: Sequence[ToolCall] = ()
    tools: Collection[str] = ()
    schema_of: Callable[[str], dict[str, Any] | None] = lambda _name: None
    request: str = ""
    history: Sequence[Message] = ()
    workdir: Path = Path()
    turn: int = 0
    max_turns: int = 0
    tools_off: bool = False
    unreadable: Sequence[str] = ()
    truncated: bool = False
    budget_left: int = 0
    call_opening: Callable[[], Awaitable[str]] = _no_opening
    prepare: Callable[[ToolCall], Awaitable[PreparedCall | ToolOutcome]] | None = None
