"""`SessionRecorder`: persists one run into a `SessionStore` as it happens.

It is both a `LoopPlugin` (every appended message is written at once, synchronously, so a crash
loses at most the reply in flight) and an event callback (the run's events become the session's
event log and audit trail). It also holds the session's write lease for the run.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from loopwright import messages
from loopwright.errors import LoopwrightError
from loopwright.events import Event, event_to_dict
from loopwright.messages import Message, Usage
from loopwright.plugins import LoopPlugin
from loopwright.store import RunRecord, SessionStore
from loopwright.store.lease import RENEW_SECONDS, new_owner

if TYPE_CHECKING:
    from loopwright.loop import RunState
    from loopwright.result import RunResult

TITLE_CHARS = 80
PREVIEW_CHARS = 500  # of a tool result kept in the event log (the full text is in the messages)
_UNRECORDED = frozenset({"text_delta", "reasoning_delta"})  # the messages hold the text


class SessionRecorder(LoopPlugin):
    """Writes one run's messages, events, usage and cost to `store` under `session_id`."""

    def __init__(self, store: SessionStore, session_id: str, *, model: str = "",
                 cwd: str = "") -> None:
        self.store = store
        self.session_id = session_id
        self.model = model
        self.cwd = cwd
        self.owner = new_owner()
        self.resumed = False
        self._run: RunState | None = None
        self._failure: str | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._leased = False
        # usage and cost the run had spent when it moved to this session (after a compaction)
        self._usage_before = Usage()
        self._cost_before: float | None = 0.0

    # -- before the run: create or resume the session, take its lease --

    def open(self, history: list[Message] | None, *, system_prompt: str, prompt: str
             ) -> list[Message]:
        """The history the run starts from (system message first), after taking the lease.

        A new session stores `history`. An existing one is resumed: without `history` its stored
        messages are loaded and repaired (calls cut off by a crash get an error result); with
        `history` (a caller continuing in memory) only messages the store lacks are written.
        """
        store, sid = self.store, self.session_id
        existing = store.get(sid)
        if existing is None:
            store.create(sid, model=self.model, cwd=self.cwd, system_prompt=system_prompt,
                         title=_title(prompt, history))
        store.acquire(sid, self.owner)
        self._leased = True
        try:
            return self._initial_history(history, system_prompt, existing is not None)
        except BaseException:
            self.release()
            raise

    def _initial_history(self, history: list[Message] | None, system_prompt: str,
                         exists: bool) -> list[Message]:
        store, sid = self.store, self.session_id
        given = list(history or [])
        head = [given.pop(0)] if given and given[0].role == "system" else []
        stored = store.load(sid) if exists else []
        if exists and history is None:
            self.resumed = True
            conversation = messages.close_interrupted_calls(stored)
            repaired_suffix = conversation[len(stored):]
            if conversation[:len(stored)] == stored and repaired_suffix:
                _append_many(store, sid, repaired_suffix)
        else:
            conversation = given
            if stored == given[:len(stored)]:
                _append_many(store, sid, given[len(stored):])
        if exists:
            _update(store, sid, system_prompt=system_prompt, model=self.model)
        return [*(head or [messages.system(system_prompt)]), *conversation]

    def release(self) -> None:
        """Give the lease back (idempotent)."""
        if self._leased:
            self._leased = False
            with contextlib.suppress(LoopwrightError):
                self.store.release(self.session_id, self.owner)

    # -- during the run --

    async def on_run_start(self, run: RunState) -> None:
        self._run = run
        self._guard(run, lambda: self.store.record_run(
            self.session_id, RunRecord(run_id=run.run_id), model=self.model))
        self._heartbeat = asyncio.ensure_future(self._renew_forever(run, asyncio.current_task()))

    def on_message(self, run: RunState, message: Message) -> None:
        self._guard(run, lambda: self.store.append(self.session_id, message))

    def __call__(self, event: Event) -> None:
        """The event callback: record everything but text deltas."""
        run = self._run
        if run is None or event.type in _UNRECORDED:
            return
        row = _slim(event_to_dict(event))
        self._guard(run, lambda: self.store.record_events(self.session_id, run.run_id, [row]),
                    writes_messages=False)
        if event.type == "turn_end" and not event.agent:
            self._guard(run, lambda: self.store.record_run(
                self.session_id, self._record(run, None), model=self.model),
                writes_messages=False)

    def on_compaction(self, run: RunState, parent_session_id: str | None) -> None:
        """The run goes on in a new session (lineage: parent = the old one), which starts from
        the compacted history; the old session keeps its full record and this run's usage so
        far, ended with stop reason "compacted"."""
        old, new = self.session_id, run.session_id
        if not new or new == old:
            return
        self._guard(run, lambda: self._move(run, old, new))

    def _move(self, run: RunState, old: str, new: str) -> None:
        store = self.store
        store.record_run(old, self._record(run, None, stop_reason="compacted"),
                         model=self.model, ended=True)
        previous = store.get(old)
        head = run.history[0] if run.history and run.history[0].role == "system" else None
        store.create(new, model=self.model, cwd=self.cwd, parent_id=old,
                     title=previous.title if previous else "",
                     system_prompt=head.content if head else None)
        store.acquire(new, self.owner)
        self.release()
        self._leased = True
        self.session_id = new
        self._usage_before = _copy(run.usage)
        self._cost_before = run.cost.total
        _append_many(store, new, [m for m in run.history if m.role != "system"])
        store.record_run(new, RunRecord(run_id=run.run_id), model=self.model)

    async def on_run_end(self, run: RunState, result: RunResult) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        self._guard(run, lambda: self.store.record_run(
            self.session_id, self._record(run, result), model=self.model, ended=True),
            writes_messages=False)
        self.release()

    def _record(self, run: RunState, result: RunResult | None, *,
                stop_reason: str | None = None) -> RunRecord:
        """The run's row for the current session: what it spent since it moved here."""
        total = result.cost if result is not None else run.cost.total
        before = self._cost_before
        cost = None if total is None or before is None else total - before
        return RunRecord(
            run_id=run.run_id, turns=run.turn, cost=cost,
            usage=_minus(run.usage, self._usage_before),
            stop_reason=result.stop_reason if result is not None else stop_reason,
            error=result.error if result is not None else None)

    async def _renew_forever(self, run: RunState, driver: asyncio.Task[Any] | None) -> None:
        """Keep the lease while the run's task lives (a task killed without reaching
        `on_run_end` still lets go of its session within one renewal period)."""
        while True:
            await asyncio.sleep(RENEW_SECONDS)
            if driver is not None and driver.done():
                self.release()
                return
            if not self._guard(run, lambda: self.store.renew(self.session_id, self.owner),
                               writes_messages=False):
                return

    def _guard(self, run: RunState, write: Any, *, writes_messages: bool = True) -> bool:
        """Run one store write. A failing store must not crash the run: the first failure is
        reported as a `store_error` status and message writes stop, so the stored history stays a
        clean prefix of the real one (and resumable)."""
        if self._failure is not None and writes_messages:
            return False
        try:
            write()
        except LoopwrightError as exc:
            if self._failure is None:
                self._failure = str(exc)
                run.status("store_error", f"session {self.session_id} is no longer being saved: "
                           f"{exc}", {"session_id": self.session_id})
            return False
        return True


def _append_many(store: SessionStore, session_id: str, history: list[Message]) -> None:
    bulk = getattr(store, "append_many", None)
    if bulk is not None:
        bulk(session_id, history)
        return
    for message in history:
        store.append(session_id, message)


def _update(store: SessionStore, session_id: str, **fields: Any) -> None:
    update = getattr(store, "update", None)
    if update is not None:
        update(session_id, **fields)


def _title(prompt: str, history: list[Message] | None) -> str:
    text = prompt.strip() or next(
        (m.content for m in history or [] if m.role == "user" and m.content.strip()), "")
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS - 1] + "…"


def _copy(usage: Usage) -> Usage:
    out = Usage()
    out.add(usage)
    return out


def _minus(usage: Usage, before: Usage) -> Usage:
    now, then = usage.to_dict(), before.to_dict()
    return Usage(**{name: now[name] - then[name] for name in now})


def _slim(row: dict[str, Any]) -> dict[str, Any]:
    """The stored form of an event: tool output and final results are in the messages already."""
    kind = row.get("type")
    if kind == "tool_result":
        content = row.pop("content", "")
        row["content_chars"] = len(content)
        row["preview"] = content[:PREVIEW_CHARS]
    elif kind in ("done", "error", "cancelled") and isinstance(row.get("result"), dict):
        result = dict(row["result"])
        result["message_count"] = len(result.pop("messages", []))
        row["result"] = result
    return row
