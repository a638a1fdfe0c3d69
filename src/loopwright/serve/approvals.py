"""Human approval over the wire: the `approval` callback of every agent the server runs.

When the policy asks for approval (a dangerous command, an `ask` rule), the callback finds the
HTTP run it belongs to (set in a context variable when the run starts, so sub-agents' calls find
their parent's run too) and the tool call (`current_approval()`), emits a `status` event of kind
`approval_required` into the run's stream — with the `call_id` to answer, the tool, the action and
the detail — and waits for `POST /runs/{id}/approvals/{call_id}`.

It fails closed: no answer within `timeout` seconds denies, and so does a run that nobody watches
(no SSE client attached for `grace` seconds). The denial's reason reaches the model, and a
`status` event of kind `approval_expired` tells clients the question went unanswered.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

from loopwright.safety.policy import ApprovalAnswer, current_approval
from loopwright.serve import DEFAULT_APPROVAL_TIMEOUT
from loopwright.serve.runs import PendingApproval, ServeRun

DECISIONS: dict[str, ApprovalAnswer] = {"allow": True, "deny": False, "always": "always"}
"""What `POST /runs/{id}/approvals/{call_id}` accepts as `decision`."""
_POLL = 0.1  # seconds between checks that an approver is still attached

_SERVE_RUN: ContextVar[ServeRun | None] = ContextVar("loopwright_serve_run", default=None)


@contextlib.contextmanager
def serving(run: ServeRun) -> Iterator[None]:
    """Runs started inside this block (and their sub-agents) ask `run`'s clients."""
    token = _SERVE_RUN.set(run)
    try:
        yield
    finally:
        _SERVE_RUN.reset(token)


class ApprovalUnanswered(Exception):
    """Nobody answered: the call is denied with this reason."""


class WireApprovals:
    """The approval callback: asks the HTTP clients of the run, fails closed."""

    def __init__(self, *, timeout: float = DEFAULT_APPROVAL_TIMEOUT, grace: float = 5.0) -> None:
        self.timeout = timeout
        self.grace = grace  # how long a question waits for a client to be attached at all

    async def __call__(self, action: str, detail: str) -> ApprovalAnswer:
        run = _SERVE_RUN.get()
        request = current_approval()
        if run is None or request is None:
            raise ApprovalUnanswered("the call was not made by a run started over HTTP")
        key = _free_key(run, request.call_id or "call")
        answer: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()
        run.approvals[key] = PendingApproval(call_id=key, answer=answer)
        try:
            request.context.status(
                "approval_required",
                f"{action}: answer allow, deny or always within {self.timeout:g}s",
                call_id=key, tool=request.tool, action=action, detail=detail,
                timeout=self.timeout)
            try:
                return await self._wait(run, answer)
            except ApprovalUnanswered as exc:  # told apart from a "deny", for the page's card
                request.context.status("approval_expired", f"{action}: {exc}", call_id=key,
                                       reason=str(exc))
                raise
        finally:
            run.approvals.pop(key, None)

    async def _wait(self, run: ServeRun, answer: asyncio.Future[ApprovalAnswer]
                    ) -> ApprovalAnswer:
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ApprovalUnanswered(f"no one answered within {self.timeout:g}s")
            done, _ = await asyncio.wait({answer}, timeout=min(_POLL, left))
            if done:
                return answer.result()
            if run.unwatched_for() >= self.grace:
                raise ApprovalUnanswered("no approver is connected to the run")


def answer_approval(run: ServeRun, call_id: str, decision: str) -> bool:
    """Answer a pending question; False if none is pending under `call_id`."""
    pending = run.approvals.get(call_id)
    if pending is None or pending.answer.done():
        return False
    pending.answer.set_result(DECISIONS[decision])
    return True


def _free_key(run: ServeRun, call_id: str) -> str:
    """`call_id`, or `call_id~N` when a sub-agent's call with the same id is pending too."""
    key, n = call_id, 1
    while key in run.approvals:
        n += 1
        key = f"{call_id}~{n}"
    return key
