"""The providers one agent talks to: resolved and window-probed once, built into model clients.

`AgentProviders` turns the settings (model, base URL, key, API mode, fallbacks) into the
resolved primary and fallback providers, probes each one's context window once per agent, and
builds the `ProviderChain` a run calls — or a chain with another model first, when
`choose_model` picks one for a call.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import TYPE_CHECKING, Any

from loopwright.endpoints.client import ModelClient
from loopwright.endpoints.fallback import CredentialRefresher, ProviderChain
from loopwright.endpoints.resolve import (
    Resolved,
    detect_provider,
    first_served_model,
    resolve_model,
)
from loopwright.endpoints.retry import RetryPolicy
from loopwright.profiles import profile_for
from loopwright.wire import get_wire_format

if TYPE_CHECKING:
    import httpx

    from loopwright.endpoints.probe import WindowInfo
    from loopwright.settings import Settings


class AgentProviders:
    """Resolution and clients for one agent; `windows` is shared with the run's context budget,
    which records a window it learns from an overflow there."""

    def __init__(self, settings: Settings, *, retry: RetryPolicy,
                 refresh_credentials: CredentialRefresher | None,
                 http_client: httpx.AsyncClient | None) -> None:
        self.settings = settings
        self.retry = retry
        self.refresh_credentials = refresh_credentials
        self.http_client = http_client
        self.resolved: list[Resolved] | None = None
        self.windows: list[WindowInfo] = []  # per provider in the chain, found at first run
        # one lock per event loop resolving (an asyncio.Lock belongs to one loop: shared, a
        # second loop's `chat()` raised, or waited for ever on a release made on another
        # loop); the map is touched under a thread lock, the resolving under the loop's own
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary())
        self._locks_guard = threading.Lock()

    def adopt(self, other: AgentProviders) -> None:
        """Use `other`'s resolution and windows (a sub-agent on the same model)."""
        self.resolved, self.windows = other.resolved, list(other.windows)

    async def resolve(self) -> list[Resolved]:
        """The primary provider then each fallback, resolved and probed once."""
        if self.resolved is not None:
            return self.resolved
        async with self._loop_lock():
            if self.resolved is None:
                from loopwright.endpoints.probe import detect_windows

                resolved = await self._resolve_all()
                windows = await detect_windows(resolved, explicit=self.settings.context_window)
                # loops on other threads may have resolved meanwhile (the same settings give
                # the same answer): the first to finish is kept, and its windows with it
                with self._locks_guard:
                    if self.resolved is None:
                        self.windows, self.resolved = windows, resolved
        return self.resolved

    def _loop_lock(self) -> asyncio.Lock:
        """The running loop's resolution lock."""
        loop = asyncio.get_running_loop()
        with self._locks_guard:
            lock = self._locks.get(loop)
            if lock is None:
                lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def chain(self) -> ProviderChain:
        return ProviderChain(clients=[self.client(r) for r in await self.resolve()],
                             refresh_credentials=self.refresh_credentials)

    def switched_chain(self, model: Any, chain: ProviderChain) -> ProviderChain:
        """`model` (chosen by choose_model) first, then the call's own chain as its fallback."""
        from loopwright.routing.side import resolve_model_spec

        chosen = self.client(resolve_model_spec(model, self.settings.aliases,
                                                setting="choose_model"))
        return ProviderChain(clients=[chosen, *chain.clients],
                             refresh_credentials=self.refresh_credentials)

    def client(self, r: Resolved) -> ModelClient:
        return ModelClient(
            endpoint=r.endpoint,
            wire=get_wire_format(r.mode),
            model=r.model,
            profile=profile_for(r.model),
            retry=self.retry,
            stream_idle_timeout=self.settings.stream_idle_timeout,
            request_timeout=self.settings.request_timeout,
            http_client=self.http_client,
        )

    async def _resolve_all(self) -> list[Resolved]:
        s = self.settings
        model, base_url = s.model, s.base_url
        if model is None and base_url:  # a server but no model: the first one it serves us
            sent = resolve_model("default", base_url=base_url, api_key=s.api_key,
                                 api_mode=s.api_mode).endpoint.request_headers()
            model = await first_served_model(base_url, timeout=5.0, headers=sent) or "default"
        elif model is None:
            model, base_url = await detect_provider()
        primary = resolve_model(model, base_url=base_url, api_key=s.api_key, api_mode=s.api_mode,
                                aliases=s.aliases)
        if not s.fallbacks:
            return [primary]
        from loopwright.routing.side import resolve_model_spec

        return [primary, *(resolve_model_spec(item, s.aliases) for item in s.fallbacks)]
