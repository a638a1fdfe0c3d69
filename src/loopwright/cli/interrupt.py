"""Ctrl-C for terminal runs: the first press cancels the run, the second quits at once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from loopwright.agent import Agent
    from loopwright.cli.render import Renderer
    from loopwright.messages import Message
    from loopwright.result import RunResult

EXIT_CANCELLED = 130
"""Exit code after Ctrl-C, as shells report a SIGINT death."""


@contextlib.contextmanager
def ctrl_c_calls(on_interrupt: Callable[[], None]) -> Iterator[None]:
    """While inside, the first Ctrl-C calls `on_interrupt`; the next one quits the process at once.

    Must be entered on the running loop's thread. The handler is installed on the loop, so
    `on_interrupt` runs as an ordinary loop callback rather than inside a signal frame.
    """
    loop = asyncio.get_running_loop()
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        if presses > 1:
            quit_now()
        on_interrupt()

    restore: Callable[[], object]
    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        restore = lambda: loop.remove_signal_handler(signal.SIGINT)  # noqa: E731
    except NotImplementedError:  # Windows has no loop signal handlers
        previous = signal.signal(signal.SIGINT, lambda *_: loop.call_soon_threadsafe(on_sigint))
        restore = lambda: signal.signal(signal.SIGINT, previous)  # noqa: E731
    try:
        yield
    finally:
        restore()


def quit_now() -> NoReturn:
    """Leave without waiting for the run to wind down (the second Ctrl-C)."""
    from loopwright.cli.typeahead import release

    release()  # the chat's hold on the terminal: os._exit runs no `finally`
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.write("\nloopwright: interrupted\n")
        sys.stderr.flush()
    os._exit(EXIT_CANCELLED)


async def interruptible_run(agent: Agent, prompt: str, history: list[Message] | None,
                            renderer: Renderer) -> RunResult | None:
    """`agent.run()` with Ctrl-C cancelling it; None if Ctrl-C came before the run had started.

    A cancelled run still returns its `RunResult` (stop reason `cancelled`), so the history up
    to the cancel is kept.
    """
    main_task = asyncio.current_task()

    def cancel() -> None:
        renderer.note("cancelling… (press Ctrl-C again to quit at once)")
        if not agent.cancel() and main_task is not None:
            main_task.cancel()  # no run is live yet: it is still looking for its provider

    with ctrl_c_calls(cancel):
        try:
            return await agent.run(prompt, history=history, raise_on_error=False)
        except asyncio.CancelledError:
            return None
