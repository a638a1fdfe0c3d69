"""`ThreadedStore`'s hop to its worker thread: results, errors, order, and exit."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from loopwright.errors import SessionError
from loopwright.messages import user
from loopwright.store.sqlite import SQLiteStore
from loopwright.store.threaded import ThreadedStore


def test_calls_run_off_the_loop_in_order_and_errors_reach_the_caller(tmp_path: Path) -> None:
    async def go() -> None:
        store = ThreadedStore(SQLiteStore(tmp_path / "s.db"))
        loop_thread = threading.get_ident()
        seen: list[int] = []
        original = store.sync.append

        def append(session_id: str, message: object) -> None:
            seen.append(threading.get_ident())
            original(session_id, message)  # type: ignore[arg-type]

        store.sync.append = append  # type: ignore[method-assign]
        await store.create("s1")
        await asyncio.gather(*(store.append("s1", user(f"m{i}")) for i in range(20)))
        assert [m.content for m in await store.load("s1")] == [f"m{i}" for i in range(20)]
        assert seen and loop_thread not in seen
        with pytest.raises(SessionError, match="no session"):
            await store.resolve("nothing-like-it")
        await store.aclose()

    asyncio.run(go())


def test_a_store_never_closed_lets_the_process_exit(tmp_path: Path) -> None:
    """The worker thread does not hold the process at exit, with a store left open."""
    path = tmp_path / "s.db"
    script = textwrap.dedent(f"""
        import asyncio
        from loopwright.messages import user
        from loopwright.store.sqlite import SQLiteStore
        from loopwright.store.threaded import ThreadedStore

        STORE = ThreadedStore(SQLiteStore({str(path)!r}))

        async def go():
            await STORE.create("s1")
            for i in range(50):
                await STORE.append("s1", user(f"m{{i}}"))

        asyncio.run(go())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    with SQLiteStore(path) as store:
        assert store.message_count("s1") == 50
