"""`BlockingStore`: an async store's methods as plain blocking calls, for the CLI's one-shot
commands (`loopwright sessions …` against a PostgreSQL store). The store lives on a private
event loop in a thread of its own, so every call reuses one connection, and a caller that is
itself inside an event loop (a test driving the CLI in-process) does not collide with it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any


class BlockingStore:
    """`store.method(...)` runs the async store's method to completion on the private loop."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="loopwright-blocking-store")
        self._thread.start()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._store, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return asyncio.run_coroutine_threadsafe(method(*args, **kwargs), self._loop).result()

        return call

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._store.aclose(), self._loop).result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> BlockingStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
