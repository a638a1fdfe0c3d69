"""The contexts `SQLiteStore` runs its statements in: SQLite's errors translated
(`Translating`), and one write transaction (`Transaction`).

(Classes, not generators under `contextlib.contextmanager`: a turn's transaction made and
stepped two generators and their wrappers, ~170 bytecodes of the store thread's ~1,200 a turn.)
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopwright.store.sqlite import SQLiteStore


class Translating:
    """`SQLiteStore._translate`'s context."""

    __slots__ = ("action", "store")

    def __init__(self, store: SQLiteStore, action: str) -> None:
        self.store, self.action = store, action

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> None:
        if exc is not None and (error := self.store._translated(exc, self.action)) is not None:
            raise error from exc


class Transaction:
    """`SQLiteStore._write`'s context: the store's lock held, `BEGIN IMMEDIATE` on entry,
    `COMMIT` on a clean exit, `ROLLBACK` on an exception; SQLite's errors translated
    (`SQLiteStore._translated`)."""

    __slots__ = ("action", "store")

    def __init__(self, store: SQLiteStore, action: str) -> None:
        self.store, self.action = store, action

    def __enter__(self) -> sqlite3.Connection:
        store = self.store
        store._lock.acquire()
        try:
            store._db.execute("BEGIN IMMEDIATE")
        except BaseException as exc:
            store._lock.release()
            self._raise(exc)
            raise
        return store._db

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> None:
        store = self.store
        try:
            if exc is None:
                store._db.execute("COMMIT")
            elif store._db.in_transaction:  # SQLite rolls back itself on a full disk, an I/O
                store._db.execute("ROLLBACK")  # error…: a ROLLBACK then hid the error's cause
        except BaseException as failed:
            self._raise(failed)
            raise
        finally:
            store._lock.release()
        if exc is not None:
            self._raise(exc)

    def _raise(self, exc: BaseException) -> None:
        """Raise SQLite's error `exc` translated (nothing for any other)."""
        error = self.store._translated(exc, self.action)
        if error is not None:
            raise error from exc
