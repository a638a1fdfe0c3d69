"""One lease-renewal task per event loop, for all its runs (a run renews its session's lease
every `RENEW_SECONDS`: store/lease.py).

A task of each run's own slept until its first renewal: a task and a timer made and cancelled
a run, and while the run went on, its timer sat in the loop's heap beside the HTTP client's,
whose every push and pop then compared with it in Python (15 `TimerHandle.__lt__` calls a turn
of the store bench, 2 without a store, 4 with one timer for all runs). One task per loop
sleeps instead while any run holds a lease, and renews them all when it wakes."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable

from loopwright.store.lease import RENEW_SECONDS

Renewal = Callable[[], Awaitable[bool]]  # renews one lease; False: stop renewing it


class Heartbeat:
    """The leases one event loop's runs hold, renewed together every `RENEW_SECONDS`."""

    def __init__(self) -> None:
        self._renewals: dict[object, Renewal] = {}
        self._task: asyncio.Task[None] | None = None

    def add(self, key: object, renew: Renewal) -> None:
        """Renew with `renew` about every `RENEW_SECONDS` (the first within one) until
        `discard(key)` or until it returns False."""
        self._renewals[key] = renew
        if self._task is None:
            self._task = asyncio.ensure_future(self._beat())

    def discard(self, key: object) -> None:
        self._renewals.pop(key, None)

    async def _beat(self) -> None:
        try:
            while self._renewals:
                await asyncio.sleep(RENEW_SECONDS)
                due = list(self._renewals.items())
                # one run's renewal raising must not end the renewals of the loop's other runs
                kept = await asyncio.gather(*(renew() for _, renew in due),
                                            return_exceptions=True)
                for (key, renew), keep in zip(due, kept, strict=True):
                    if keep is not True and self._renewals.get(key) is renew:
                        del self._renewals[key]
        finally:
            self._task = None


_BEATS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Heartbeat] = (
    weakref.WeakKeyDictionary())


def heartbeat() -> Heartbeat:
    """The running event loop's heartbeat."""
    loop = asyncio.get_running_loop()
    beat = _BEATS.get(loop)
    if beat is None:
        beat = _BEATS[loop] = Heartbeat()
    return beat
