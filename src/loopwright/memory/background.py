"""Work after the answer: started without delaying the run's result, awaited before the agent
closes (`Agent.aclose()`, `async with Agent(...)`, `Agent.chat()`, the CLI), and never able to
change a result that is already out."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

logger = logging.getLogger("loopwright")


class BackgroundWork:
    """The agent's tasks started after an answer; `wait()` lets them finish."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, work: Coroutine[Any, Any, None], *, what: str) -> asyncio.Task[None]:
        async def guarded() -> None:
            try:
                await work
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the run is over: log it, never raise it anywhere
                logger.warning("loopwright: %s failed after the answer: %s", what, exc)

        task = asyncio.ensure_future(guarded())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def pending(self) -> int:
        return sum(1 for task in self._tasks if not task.done())

    async def wait(self, timeout: float | None = 120.0) -> None:
        """Let every started task finish (those of this event loop); after `timeout` seconds
        the rest are cancelled, so closing never hangs on a dead side model."""
        loop = asyncio.get_running_loop()
        tasks = [t for t in self._tasks if not t.done() and t.get_loop() is loop]
        if not tasks:
            return
        _done, late = await asyncio.wait(tasks, timeout=timeout)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
