"""The parts an `Agent` is built from that a setting may leave out — each is imported only when
its setting asks for it, so an agent that does not use a part never loads its modules
(tests/test_startup.py) — and the private event loop `chat()` runs on beside a running one."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from loopwright.errors import ConfigError

if TYPE_CHECKING:
    from loopwright.endpoints.fallback import ProviderChain
    from loopwright.endpoints.resolve import Resolved
    from loopwright.events import Event
    from loopwright.mcp.client import MCPManager
    from loopwright.output import OutputSpec
    from loopwright.plugins import LoopPlugin
    from loopwright.routing.choose import ChooseModel
    from loopwright.settings import Settings
    from loopwright.skills import AgentSkills

T = TypeVar("T")


def otel_tracer() -> Callable[[Event], None]:
    """Imported only when asked for: without `otel`, OpenTelemetry is never loaded."""
    try:
        from loopwright.tracing import OtelTracer
    except ImportError as exc:
        raise ConfigError("otel = true needs OpenTelemetry: pip install 'loopwright[otel]' "
                          f"({exc})") from None
    return OtelTracer()


def tool_format(settings: Settings, chain: ProviderChain) -> Settings:
    """A model whose profile has no native tool calling gets prompt mode by itself."""
    if settings.tool_call_format == "native" and not chain.current.profile.supports_tools:
        return dataclasses.replace(settings, tool_call_format="prompt")
    return settings


def run_workdir(workdir: str | Path | None) -> Path:
    """A run's working directory: the one given (resolved), else the current one."""
    if workdir:
        return Path(workdir).resolve()
    return _path_of(os.getcwd())  # every run asks: the path made once per directory


@functools.lru_cache(maxsize=8)
def _path_of(directory: str) -> Path:
    return Path(directory)


def output_spec(output_type: type[Any] | None) -> OutputSpec | None:
    if output_type in (None, str):
        return None
    from loopwright.output import OutputSpec

    return OutputSpec.of(output_type)


def output_plugins(spec: OutputSpec | None, settings: Settings, chain: ProviderChain
                   ) -> list[LoopPlugin]:
    """The structured-output plugin (none without `output_type`): OpenAI's native
    `json_schema` format where the provider has it, else the `final_result` tool."""
    if spec is None:
        return []
    mode = settings.output_mode
    if mode == "auto":
        client = chain.current
        native = (client.profile.supports_json_schema
                  and client.wire.mode in ("chat_completions", "responses"))
        mode = "native" if native else "tool"
    from loopwright.output import StructuredOutput

    return [StructuredOutput(spec, mode=mode, retries=settings.output_retries)]


def limit_plugins(settings: Settings) -> list[LoopPlugin]:
    """The usage limiter, loaded only when `usage_limits` are set."""
    if not settings.usage_limits:
        return []
    from loopwright.limits import UsageLimiter

    return [UsageLimiter(settings.usage_limits)]


def place_review_checks(settings: Settings) -> None:
    """The user's review checks placed in the table now, as each run will place them: one that
    is not a `Check` or whose `position` names no check is an error when the agent is made,
    not when its first run starts."""
    if not settings.review_checks:
        return
    from loopwright.review.table import default_checks, with_user_checks

    with_user_checks(default_checks(doom_loop_threshold=settings.doom_loop_threshold,
                                    max_calls_per_reply=settings.max_tool_calls_per_reply,
                                    prompt_mode=False),
                     settings.review_checks)


def skills(settings: Settings, workdir: Path) -> AgentSkills | None:
    """The agent's skills; None (the skills package not even loaded) when they are off."""
    if not settings.skills:
        return None
    from loopwright.skills import AgentSkills

    return AgentSkills.from_settings(settings, workdir)


def router_plugins(settings: Settings) -> list[LoopPlugin]:
    if not settings.router:
        return []
    from loopwright.routing.router import IntentRouter

    return [IntentRouter()]


def side_models(settings: Settings) -> dict[str, list[Resolved]]:
    """Each side task's own chain (routing/side.py), loaded only when one is set."""
    from loopwright.settings import SIDE_TASKS

    if not any(getattr(settings, f"{task}_model") or getattr(settings, f"{task}_fallbacks")
               for task in SIDE_TASKS):
        return {}
    from loopwright.routing.side import resolve_side_models

    return resolve_side_models(settings)


def chooser(value: Any) -> ChooseModel | None:
    if value is None or value == []:
        return None
    from loopwright.routing.choose import chooser_from_setting

    return chooser_from_setting(value)


def sandbox_configured(settings: Settings) -> bool:
    """A sandbox setting differs from its default: checked when the agent is made."""
    from loopwright.settings import DEFAULTS

    return any(getattr(settings, name) != getattr(DEFAULTS, name)
               for name in ("sandbox_mode", "sandbox_network", "env_passthrough",
                            "sandbox_bwrap"))


def mcp_manager(settings: Settings) -> MCPManager | None:
    if not settings.mcp_servers:
        return None
    from loopwright.mcp.client import MCPManager
    from loopwright.settings import default_cache_dir

    cache = Path(settings.cache_dir) if settings.cache_dir else default_cache_dir()
    return MCPManager(settings.mcp_servers, log_dir=cache / "mcp")


_INTERRUPT_POLL = 0.05  # seconds between looks at whether the blocked caller was cancelled


def beside_the_running_loop(main: Coroutine[Any, Any, T]) -> T:
    """`main` run to the end on an event loop of its own on a private thread, while the
    caller's loop waits. An interrupted wait — a `KeyboardInterrupt` here (Jupyter's
    interrupt) or the calling task cancelled (`asyncio.run`'s Ctrl-C) — cancels `main` and
    waits for it to unwind before it is raised: the run stops as it would on the caller's
    loop, rather than going on, unseen, until it ends."""
    caller = asyncio.current_task()
    cancels = caller.cancelling() if caller is not None else 0
    started: concurrent.futures.Future[tuple[asyncio.AbstractEventLoop, asyncio.Future[T]]]
    started = concurrent.futures.Future()

    async def tracked() -> T:
        task = asyncio.ensure_future(main)
        started.set_result((asyncio.get_running_loop(), task))
        return await task

    with concurrent.futures.ThreadPoolExecutor(1, "loopwright-chat") as private:
        finished = private.submit(asyncio.run, tracked())
        try:
            while True:
                with contextlib.suppress(concurrent.futures.TimeoutError):
                    return finished.result(timeout=_INTERRUPT_POLL)
                if caller is not None and caller.cancelling() > cancels:
                    raise asyncio.CancelledError
        except BaseException:
            if not finished.done():
                loop, task = started.result()
                loop.call_soon_threadsafe(task.cancel)
            with contextlib.suppress(BaseException):  # the interruption is what is raised
                finished.result()
            raise
