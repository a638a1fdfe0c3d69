"""`Agent`: a reusable, concurrency-safe configuration; every run gets its own history and budget."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

from loopwright import messages
from loopwright.config import FIELD_NAMES, Settings, load_settings
from loopwright.context.prompt import build_system_prompt
from loopwright.endpoints.base import close_shared_client
from loopwright.endpoints.client import ModelClient
from loopwright.endpoints.fallback import CredentialRefresher, ProviderChain
from loopwright.endpoints.resolve import Resolved, detect_provider, resolve_model
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import ConfigError, LoopwrightError
from loopwright.events import TERMINAL_TYPES, Event
from loopwright.guards import IterationBudget
from loopwright.loop import LoopSettings, RunState, drive
from loopwright.messages import Message
from loopwright.plugins import LoopPlugin
from loopwright.profiles import profile_for
from loopwright.result import RunResult
from loopwright.tools.base import ApprovalGate, Tool, _deny_all
from loopwright.tools.execute import ToolExecutor
from loopwright.tools.registry import ToolRegistry
from loopwright.wire import get_wire_format
from loopwright.wire.base import ToolSpec

EventCallback = Callable[[Event], None]


class RunHandle:
    """A live run: await it for the `RunResult`; `steer()` and `cancel()` address this run only."""

    def __init__(self, state: RunState, task: asyncio.Task[RunResult]) -> None:
        self.state = state
        self.task = task

    @property
    def run_id(self) -> str:
        return self.state.run_id

    @property
    def session_id(self) -> str | None:
        return self.state.session_id

    def steer(self, text: str) -> bool:
        if self.task.done():
            return False
        self.state.steer(text)
        return True

    def cancel(self) -> bool:
        if self.task.done():
            return False
        self.state.cancel()
        return True

    def __await__(self) -> Any:
        return self.task.__await__()


class Agent:
    """An agent: model, tools and guards. See DESIGN §2 for the full keyword list."""

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_mode: str | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        system_prompt: str | None = None,
        max_turns: int | None = None,
        stream: bool | None = None,
        callbacks: Iterable[EventCallback] = (),
        plugins: Iterable[LoopPlugin] = (),
        approval: ApprovalGate | None = None,
        retry: RetryPolicy | None = None,
        refresh_credentials: CredentialRefresher | None = None,
        **options: Any,
    ) -> None:
        unknown = sorted(set(options) - FIELD_NAMES)
        if unknown:
            raise ConfigError(f"Agent() got unknown option(s) {', '.join(unknown)}; see DESIGN §2 "
                              "for the keyword arguments")
        self.settings: Settings = load_settings({
            "model": model, "base_url": base_url, "api_key": api_key, "api_mode": api_mode,
            "system_prompt": system_prompt, "max_turns": max_turns, "stream": stream, **options,
        })
        self.registry = ToolRegistry(tools, hidden=self.settings.hidden_tools)
        self.callbacks = list(callbacks)
        self.plugins = list(plugins)
        self.approval = approval
        self.retry = retry or RetryPolicy(
            attempts=self.settings.retry_attempts, base_delay=self.settings.retry_base_delay,
            max_delay=self.settings.retry_max_delay, max_pause=self.settings.retry_max_pause)
        self.refresh_credentials = refresh_credentials
        self._resolved: list[Resolved] | None = None
        self._resolve_lock: asyncio.Lock | None = None
        self._live: set[RunHandle] = set()

    # -- public API --

    async def run(self, prompt: str, *, history: list[Message] | None = None) -> RunResult:
        """Run to the end and return the result (never raises for provider failures: see
        `RunResult.stop_reason` and `.error`)."""
        handle = await self.start(prompt, history=history)
        return await handle

    def chat(self, prompt: str) -> str:
        """Synchronous convenience: run and return the final text. Raises on `error` runs."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise LoopwrightError("Agent.chat() cannot run inside an event loop; "
                                  "use `await agent.run(...)` there")
        result = asyncio.run(self._run_and_close(prompt))
        if result.stop_reason == "error":
            raise LoopwrightError(result.error or "the run failed")
        return result.output

    async def stream(self, prompt: str, *, history: list[Message] | None = None
                     ) -> AsyncIterator[Event]:
        """Run and yield every event as it happens, ending with the terminal one.

        Leaving the iteration early cancels the run."""
        queue: asyncio.Queue[Event] = asyncio.Queue()
        handle = await self.start(prompt, history=history, extra_callback=queue.put_nowait)
        try:
            while True:
                event = await queue.get()
                yield event
                if event.type in TERMINAL_TYPES and not event.agent:
                    break
        finally:
            if not handle.task.done():
                handle.cancel()
                with contextlib.suppress(asyncio.CancelledError, LoopwrightError):
                    await handle.task

    async def start(self, prompt: str, *, history: list[Message] | None = None,
                    extra_callback: EventCallback | None = None,
                    budget: IterationBudget | None = None, agent_tag: str = "") -> RunHandle:
        """Start a run in the background and return its handle."""
        chain = await self._chain()
        callbacks = [*self.callbacks, *([extra_callback] if extra_callback else [])]

        def emit(event: Event) -> None:
            for callback in callbacks:
                callback(event)

        run_history = list(history or [])
        if not run_history or run_history[0].role != "system":
            run_history.insert(0, messages.system(self._system_prompt()))
        state = RunState(
            settings=self._loop_settings(chain),
            history=run_history,
            emit=emit,
            budget=budget or IterationBudget(total=self.settings.iteration_budget or 90),
            session_id=self.settings.session_id or uuid.uuid4().hex,
            agent_tag=agent_tag,
        )
        state.append(messages.user(prompt))
        task = asyncio.ensure_future(drive(state))
        handle = RunHandle(state, task)
        self._live.add(handle)
        task.add_done_callback(lambda _: self._live.discard(handle))
        return handle

    def steer(self, text: str) -> bool:
        """Add a user message to every live run at its next turn. True if a run was live."""
        return any([handle.steer(text) for handle in list(self._live)])

    def cancel(self) -> bool:
        """Cancel every live run. True if a run was live."""
        return any([handle.cancel() for handle in list(self._live)])

    # -- building blocks --

    async def _run_and_close(self, prompt: str) -> RunResult:
        try:
            return await self.run(prompt)
        finally:
            await close_shared_client()

    def _system_prompt(self) -> str:
        return build_system_prompt(user_prompt=self.settings.system_prompt,
                                   has_tools=len(self.registry) > 0)

    def _loop_settings(self, chain: ProviderChain) -> LoopSettings:
        s = self.settings
        executor = ToolExecutor(registry=self.registry, default_timeout=s.tool_timeout)
        return LoopSettings(
            chain=chain,
            executor=executor,
            plugins=list(self.plugins),
            max_turns=s.max_turns,
            stream=s.stream,
            max_tokens=s.max_tokens,
            temperature=s.temperature,
            reasoning_effort=s.reasoning_effort,
            doom_loop_threshold=s.doom_loop_threshold,
            max_auto_continues=s.max_auto_continues,
            workdir=Path(s.workdir).resolve() if s.workdir else Path.cwd(),
            approve=self.approval or _deny_all,
            tool_specs=self._tool_specs,
            services={"agent": self},
        )

    def _tool_specs(self, run: RunState) -> list[ToolSpec]:
        return self.registry.specs(self.registry.visible())

    async def _chain(self) -> ProviderChain:
        resolved = await self._resolve()
        clients = [
            ModelClient(
                endpoint=r.endpoint,
                wire=get_wire_format(r.mode),
                model=r.model,
                profile=profile_for(r.model),
                retry=self.retry,
                stream_idle_timeout=self.settings.stream_idle_timeout,
                request_timeout=self.settings.request_timeout,
            )
            for r in resolved
        ]
        return ProviderChain(clients=clients, refresh_credentials=self.refresh_credentials)

    async def _resolve(self) -> list[Resolved]:
        if self._resolved is not None:
            return self._resolved
        if self._resolve_lock is None:
            self._resolve_lock = asyncio.Lock()
        async with self._resolve_lock:
            if self._resolved is None:
                self._resolved = await self._resolve_all()
        return self._resolved

    async def _resolve_all(self) -> list[Resolved]:
        s = self.settings
        model, base_url = s.model, s.base_url
        if model is None:
            model, detected_url = await detect_provider()
            base_url = base_url or detected_url
        primary = resolve_model(model, base_url=base_url, api_key=s.api_key, api_mode=s.api_mode,
                                aliases=s.aliases)
        chain = [primary]
        for item in s.fallbacks:
            chain.append(_resolve_fallback(item, s.aliases))
        return chain


def _resolve_fallback(item: Any, aliases: dict[str, str]) -> Resolved:
    if isinstance(item, str):
        return resolve_model(item, aliases=aliases)
    if isinstance(item, dict) and item.get("model"):
        return resolve_model(item["model"], base_url=item.get("base_url"),
                             api_key=item.get("api_key"), api_mode=item.get("api_mode"),
                             aliases=aliases)
    raise ConfigError(f"fallback {item!r}: give a model string or a table with at least 'model' "
                      "(and optionally base_url, api_key, api_mode)")
