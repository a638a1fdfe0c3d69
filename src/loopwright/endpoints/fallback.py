"""An ordered chain of model clients: when one fails for good, the conversation moves to the next.

A chain is built per run, so "the active provider" is per run: once a run has fallen back it stays
on the fallback instead of paying the primary's full retry schedule again every turn.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from loopwright.endpoints.client import CallListeners, ModelClient
from loopwright.errors import (
    AuthError,
    ContextOverflowError,
    ProviderError,
    RequestRejectedError,
)
from loopwright.messages import ModelRequest, ModelResponse, Usage, usage_plus

# Called with the failing client after a 401/403; returns a new key, or None to give up on it.
CredentialRefresher = Callable[[ModelClient], Awaitable[str | None]]


@dataclass(kw_only=True)
class ProviderChain:
    clients: list[ModelClient]
    refresh_credentials: CredentialRefresher | None = None
    active: int = 0
    # the latest overflow a client of this chain raised: a window it names is this chain's to
    # learn, not one a call routed to another chain was told (`ContextBudget.learn`)
    overflow: ContextOverflowError | None = None

    def __post_init__(self) -> None:
        if not self.clients:
            raise ValueError("a provider chain needs at least one client")

    @property
    def current(self) -> ModelClient:
        return self.clients[self.active]

    @property
    def model(self) -> str:
        return self.current.model

    async def complete(self, request: ModelRequest, *, stream: bool,
                       listeners: CallListeners) -> ModelResponse:
        errors: list[str] = []
        discarded: Usage | None = None  # replies a failed provider returned still count
        while True:
            client = self.current
            call = request if request.model == client.model else dataclasses.replace(
                request, model=client.model)
            try:
                try:  # (inline, not a coroutine of its own: every model call passes here)
                    response = await client.complete(call, stream=stream, listeners=listeners)
                except AuthError as exc:
                    response = await self._with_new_credentials(client, call, stream, listeners,
                                                                exc)
            except ContextOverflowError as exc:
                self.overflow = exc
                raise  # another provider would not fit it either; compaction must act
            except ProviderError as exc:
                errors.append(str(exc))
                discarded = usage_plus(discarded, exc.discarded_usage)
                if self.active + 1 >= len(self.clients):
                    if len(errors) == 1:
                        raise
                    # the loop repairs a history every provider rejected as malformed
                    kind = RequestRejectedError if isinstance(exc, RequestRejectedError) else \
                        ProviderError
                    final = kind("every provider failed: " + " | ".join(errors),
                                 status=exc.status, body=exc.body)
                    final.discarded_usage = discarded or Usage()
                    raise final from exc
                self.active += 1
                if listeners.on_status is not None:
                    listeners.on_status(
                        "fallback",
                        f"{client.label} failed; continuing on {self.current.label}",
                        {"from": client.label, "to": self.current.label, "error": str(exc)},
                    )
                continue
            if discarded is not None:
                response.usage.add(discarded)
            return response

    async def _with_new_credentials(self, client: ModelClient, call: ModelRequest,
                                    stream: bool, listeners: CallListeners,
                                    refused: AuthError) -> ModelResponse:
        """`call` once more after a 401/403, when the credentials could be refreshed; else the
        refusal, raised again."""
        if self.refresh_credentials is None:
            raise refused
        key = await self.refresh_credentials(client)
        if not key:
            raise refused
        client.endpoint.api_key = key
        if listeners.on_status is not None:
            listeners.on_status("credentials_refreshed",
                                f"{client.label}: credentials refreshed; retrying", {})
        return await client.complete(call, stream=stream, listeners=listeners)
