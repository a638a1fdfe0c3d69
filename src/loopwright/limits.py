"""`usage_limits`: a run stops (`usage_limit`) once it has used the tokens, requests or money it
was allowed. Checked before each model call (requests) and after each reply (tokens, cost), so a
reply that crosses a bound is the last one: its tool calls are not run."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopwright.errors import UsageLimitExceeded
from loopwright.plugins import LoopPlugin
from loopwright.settings import UsageLimits

if TYPE_CHECKING:
    from loopwright.messages import ModelRequest, ModelResponse
    from loopwright.plugins import RunView


class UsageLimiter(LoopPlugin):
    def __init__(self, limits: UsageLimits) -> None:
        self.limits = limits

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        bound = self.limits.get("requests")
        if bound is not None and run.usage.requests >= bound:
            raise UsageLimitExceeded(f"usage limit reached: {run.usage.requests} requests "
                                     f"(limit {bound})")

    async def after_model(self, run: RunView, response: ModelResponse) -> None:
        usage = run.usage
        used = [("input tokens", usage.input_tokens, self.limits.get("input_tokens")),
                ("output tokens", usage.output_tokens, self.limits.get("output_tokens")),
                ("total tokens", usage.input_tokens + usage.output_tokens,
                 self.limits.get("total_tokens"))]
        for name, value, bound in used:
            if bound is not None and value > bound:
                self._stop(run, response, f"{value} {name} (limit {bound})")
        cost_bound = self.limits.get("cost")
        if cost_bound is not None and run.cost is not None and run.cost > cost_bound:
            self._stop(run, response, f"${run.cost:.4f} (limit ${cost_bound:.4f})")

    @staticmethod
    def _stop(run: RunView, response: ModelResponse, what: str) -> None:
        calls = response.message.tool_calls
        run.status("usage_limit", f"usage limit reached: {what}"
                   + (f"; {len(calls)} tool call(s) not run" if calls else ""))
        raise UsageLimitExceeded(f"usage limit reached: {what}")
