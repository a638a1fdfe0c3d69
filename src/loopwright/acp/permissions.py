"""Approvals through the editor: each question the policy asks is a `session/request_permission`.

The editor shows the tool call (its title, kind, locations and, for a file change, the diff) with
three options: allow once, allow always (remembered for the session, like the terminal's
"always"), reject. It fails closed: no answer within the timeout, a cancelled request, an
answer that is none of the options, or a broken connection denies the call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from acp import helpers
from acp.schema import AllowedOutcome, PermissionOption, ToolCallUpdate

from loopwright.safety.policy import ApprovalAnswer, current_approval

if TYPE_CHECKING:
    from acp.interfaces import Client

    from loopwright.acp.updates import ToolUpdate

DEFAULT_PERMISSION_TIMEOUT = 600.0  # seconds a question waits for the user in the editor

OPTIONS = [
    PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="always", name="Allow always", kind="allow_always"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]
_ANSWERS: dict[str, ApprovalAnswer] = {"allow": True, "always": "always", "reject": False}

CallLookup = Callable[[str], "ToolUpdate | None"]
"""The `tool_call` update already sent for a call id (what the editor shows in the question)."""


class EditorPermissions:
    """The `approval` callback of an ACP session's agent."""

    def __init__(self, client: Client, session_id: str, *, announced: CallLookup,
                 flush: Callable[[], Awaitable[None]],
                 inert: Callable[[ToolCallUpdate], ToolCallUpdate] = lambda question: question,
                 timeout: float = DEFAULT_PERMISSION_TIMEOUT) -> None:
        self.client = client
        self.session_id = session_id
        self.announced = announced
        self.flush = flush  # send the updates queued before the question
        self.inert = inert  # the question's text without remote images (acp/inert.py)
        self.timeout = timeout

    async def __call__(self, action: str, detail: str) -> ApprovalAnswer:
        request = current_approval()
        call_id = request.call_id if request is not None else ""
        await self.flush()  # the editor knows the tool call before it is asked about it
        started = self.announced(call_id) if call_id else None
        text = helpers.tool_content(helpers.text_block(f"{action}\n{detail}"))
        content = [*(started.content or [] if started is not None else []), text]
        question = ToolCallUpdate(
            tool_call_id=call_id or "approval",
            title=started.title if started is not None else action,
            kind=started.kind if started is not None else None,
            status="pending", content=content,
            locations=started.locations if started is not None else None)
        try:
            response = await asyncio.wait_for(
                self.client.request_permission(session_id=self.session_id,
                                               tool_call=self.inert(question), options=OPTIONS),
                timeout=self.timeout)
        except Exception:  # a time-out, an error answer or a broken connection: not approved
            return False
        outcome = response.outcome
        if isinstance(outcome, AllowedOutcome):
            return _ANSWERS.get(outcome.option_id, False)
        return False
