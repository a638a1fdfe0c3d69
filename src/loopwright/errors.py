"""loopwright's error taxonomy.

What the model did wrong (bad arguments, unknown tool, a tool that raised) is never raised:
it becomes a tool result and the loop goes on. What the infrastructure did wrong is retried,
then raised as one of these. Our own bugs propagate unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

    from loopwright.messages import Usage
    from loopwright.result import RunResult


class LoopwrightError(Exception):
    """Base class of every error loopwright raises on purpose."""


class RunCancelled(Exception):
    """`cancel()` aborted the step in flight (a model, grader or summary call, a tool batch);
    the run ends `cancelled`. Plugins raise it when `run.cancel_requested` cut their work short.
    Not a `LoopwrightError`, so that no handler of those mistakes it for a failure."""


class ConfigError(LoopwrightError):
    """The configuration is wrong or incomplete; the message says what to set."""


class ProviderError(LoopwrightError):
    """A model provider failed after retries (and fallbacks)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.body = body
        self.retry_after = retry_after
        # tokens of replies received and thrown away before the failure (they were paid for)
        self.discarded_usage: Usage | None = None


class AuthError(ProviderError):
    """401/403 from a provider: the key is missing, wrong or lacks access."""


class RateLimitPauseTooLong(ProviderError):
    """The provider demanded a pause longer than we are willing to wait."""


class StreamError(ProviderError):
    """A streamed reply died, stalled past its idle timeout, or was malformed."""


class EmptyReplyError(ProviderError):
    """The model returned neither text nor tool calls."""


class RequestRejectedError(ProviderError):
    """The provider says the request itself is malformed (whatever the status): sending the same
    bytes again cannot succeed, so it is never retried unchanged."""


class ContextOverflowError(ProviderError):
    """The request does not fit in the model's context window."""


class SessionError(LoopwrightError):
    """A session could not be loaded, locked or written."""


class ToolError(LoopwrightError):
    """Raise inside a tool to return a clean error message to the model (no traceback)."""


class RunStopped(LoopwrightError):
    """Raised by a plugin (or the loop) to end the run with a named stop reason other than
    `error`: `output_invalid`, `usage_limit`. The message becomes `RunResult.error`."""

    reason = "error"


class OutputValidationError(RunStopped):
    """The model's structured output stayed invalid after `output_retries` corrections."""

    reason = "output_invalid"


class UsageLimitExceeded(RunStopped):
    """The run reached one of its `usage_limits` (tokens, requests or cost)."""

    reason = "usage_limit"


class RunFailed(LoopwrightError):
    """`raise_on_error=True`: the run ended without its answer; `.result` is what it returned.
    When a provider error caused it, that exception is the `__cause__`."""

    def __init__(self, message: str, result: RunResult[Any]) -> None:
        super().__init__(message)
        self.result: RunResult[Any] = result
