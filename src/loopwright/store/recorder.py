"""`SessionRecorder`: persists one run into a `SessionStore` as it happens.

It is both a `LoopPlugin` (every appended message is queued) and an event callback (the run's
events become the session's event log and audit trail; a turn's record is its `turn_end` event,
and the run's row is written when it starts and when it ends: `store/turns.py`). The
queue is written out, all of it in one transaction (`store/writes.py`), whenever something the
model saw must be durable: before each model request, before a tool that is not read-only runs
(a crash inside it resumes knowing the call was made), and as soon as tool results are appended
(a crash after a tool returned resumes with its result). Events and records alone wait for the
next of those, so a steady turn costs one transaction. It also holds the session's write lease
for the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright import interrupted, messages
from loopwright.errors import LoopwrightError, SessionError
from loopwright.events import TERMINAL_TYPES, Event, StatusKind, event_to_dict, terminal_event
from loopwright.messages import Message, ModelRequest, ToolCall
from loopwright.plugins import LoopPlugin
from loopwright.store import RunRecord, SessionStore, StoreBusy
from loopwright.store.heartbeat import heartbeat
from loopwright.store.lease import new_owner
from loopwright.store.write_queue import BUSY_FIRST_DELAY, BUSY_MAX_DELAY, WriteQueue
from loopwright.store.writes import (
    AppendMessages,
    Compact,
    OpenSession,
    RecordRun,
    ReleaseLease,
    StoreWrite,
    write_all,
    written_messages,
)
from loopwright.tools.effects import EFFECT_EVENT, cut_call_notes
from loopwright.tools.idempotency import scope_mark

if TYPE_CHECKING:
    from loopwright.attachments import Attachment
    from loopwright.plugins import RunView
    from loopwright.result import RunResult
    from loopwright.tools.base import ToolContext
    from loopwright.tools.execute import GateDecision, PreparedCall

TITLE_CHARS = 80
PREVIEW_CHARS = 500  # of a tool result kept in the event log (the full text is in the messages)
_UNRECORDED = frozenset({"text_delta", "reasoning_delta"})  # the messages hold the text
# stored as their JSON form, without `_row` (a call fewer on most of a turn's events)
_AS_IS = frozenset({"turn_start", "model_call", "tool_call", "status", "review",
                    "partial_output"})
_LATE_WRITES: set[asyncio.Task[None]] = set()  # strong references until they finish


class SessionRecorder(LoopPlugin):
    """Writes one run's messages, events, usage and cost to `store` under `session_id`."""

    def __init__(self, store: SessionStore, session_id: str, *, model: str = "",
                 base_url: str = "", api_mode: str = "", cwd: str = "",
                 parent_id: str | None = None, attachments_dir: Path | None = None) -> None:
        self.store = store
        self.attachments_dir = attachments_dir  # images / PDFs stored once, by SHA-256
        self.session_id = session_id
        self.model = model
        self.provider = {"base_url": base_url, "api_mode": api_mode}  # never the key
        self.cwd = cwd
        self.parent_id = parent_id  # the delegating session, for a sub-agent's run
        self.owner = new_owner()
        self._run: RunView | None = None
        self._leased = False
        self._writes = WriteQueue(self._start_write, self._report_wait)
        self._turn_messages: list[Message] = []  # user/assistant messages since the last turn_end
        self._ended = False  # the run's terminal event is in its last write

    # -- before the run: create or resume the session, take its lease --

    async def open(self, history: list[Message] | None, *, system_prompt: str, prompt: str,
                   on_busy: Callable[[str], None] | None = None, new: bool = False
                   ) -> list[Message]:
        """The history the run starts from (system message first), after taking the lease.

        A new session stores `history`. An existing one is resumed: without `history` its stored
        messages (of its newest epoch) are loaded and repaired (calls cut off by a crash get an
        error result); with `history` (a caller continuing in memory) only messages the store
        lacks are written. A busy store is waited out (`on_busy` is told once): every step is
        safe to repeat. `new`: the caller made the session's id up, so it exists nowhere yet;
        a built-in store then creates it and takes its lease in the run's first write.
        """
        if new and _folds_opening(self.store):
            return self._open_in_first_write(history, system_prompt, _title(prompt, history))
        delay, told = BUSY_FIRST_DELAY, False
        while True:
            try:
                return await self._open_once(history, system_prompt, prompt)
            except StoreBusy as exc:
                if not told and on_busy is not None:
                    on_busy(f"the session store is busy; waiting for it: {exc}")
                    told = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, BUSY_MAX_DELAY)

    async def _open_once(self, history: list[Message] | None, system_prompt: str, prompt: str
                         ) -> list[Message]:
        store, sid = self.store, self.session_id
        title = _title(prompt, history)
        open_session = getattr(store, "open_session", None)
        if open_session is not None:  # the built-in stores: one transaction (one hop)
            exists = await open_session(sid, self.owner, model=self.model, cwd=self.cwd,
                                        title=title, parent_id=self.parent_id,
                                        system_prompt=system_prompt, **self.provider)
        else:
            exists = await store.get(sid) is not None
            if not exists:
                await store.create(sid, model=self.model, cwd=self.cwd, title=title,
                                   parent_id=self.parent_id, system_prompt=system_prompt)
                await store.update(sid, **self.provider)
            await store.acquire(sid, self.owner)
        self._leased = True
        try:
            return await self._initial_history(history, system_prompt, exists)
        except BaseException:
            await self.release()
            raise

    def _open_in_first_write(self, history: list[Message] | None, system_prompt: str,
                             title: str) -> list[Message]:
        """`open` of a new session with no hop of its own: its creation, its lease and the
        history given are queued, durable at the first flush (before the first request)."""
        self._writes.put(OpenSession(owner=self.owner, fields={
            "model": self.model, "cwd": self.cwd, "title": title, "parent_id": self.parent_id,
            "system_prompt": system_prompt, **self.provider}), durable=True)
        self._leased = True  # taken by the first write, given back in the last
        given = list(history or [])
        head = [given.pop(0)] if given and given[0].role == "system" else []
        if given:
            self._writes.put(AppendMessages(messages=list(given)), durable=True)
        return [*(head or [messages.system(system_prompt)]), *given]

    async def _initial_history(self, history: list[Message] | None, system_prompt: str,
                               exists: bool) -> list[Message]:
        store, sid = self.store, self.session_id
        given = list(history or [])
        head = [given.pop(0)] if given and given[0].role == "system" else []
        stored = await store.load(sid) if exists else []
        if exists and history is None:
            conversation = interrupted.close_interrupted_calls(
                stored, await self._interrupted_notes(stored), frozenset({scope_mark(sid)}))
            repaired_suffix = conversation[len(stored):]
            if conversation[:len(stored)] == stored and repaired_suffix:
                await store.append_many(sid, repaired_suffix)
        else:
            conversation = given
            if stored == given[:len(stored)] and len(given) > len(stored):
                await store.append_many(sid, given[len(stored):])
        if exists:
            await store.update(sid, system_prompt=system_prompt, model=self.model,
                               **self.provider)
        return [*(head or [messages.system(system_prompt)]), *conversation]

    async def _interrupted_notes(self, stored: list[Message]
                                 ) -> Callable[[ToolCall], str] | None:
        """What to tell the model of each call a crash cut off: whether it took effect, from
        the effect it recorded (tools/effects.py), else that nobody knows."""
        cut = interrupted.unanswered_calls(stored)
        read_events = getattr(self.store, "events", None)
        if not cut or read_events is None:
            return None
        records = [e for e in await read_events(self.session_id) if e.get("type") == EFFECT_EVENT]
        workdir = Path(self.cwd) if self.cwd else None
        notes = await asyncio.to_thread(
            cut_call_notes, stored, cut, records, self.session_id, workdir)
        return lambda call: notes.get(id(call), interrupted.INTERRUPTED_RESULT)

    async def release(self) -> None:
        """Give the lease back (idempotent)."""
        if self._leased:
            self._leased = False
            with contextlib.suppress(LoopwrightError):
                await self.store.release(self.session_id, self.owner)

    # -- during the run: every write goes through the queue, in order --

    async def on_run_start(self, run: RunView) -> None:
        self._run = run
        self._writes.start(run)
        self._writes.put(RecordRun(record=RunRecord(run_id=run.run_id), model=self.model))
        heartbeat().add(self, functools.partial(self._renew, run, asyncio.current_task()))

    def on_message(self, run: RunView, message: Message) -> None:
        if message.role in ("user", "assistant"):
            self._turn_messages.append(message)
        self._writes.put_message(message)

    def _start_write(self, writes: Sequence[StoreWrite]) -> asyncio.Future[None]:
        """One transaction for everything queued, under way: handed to the SQLite store's
        thread at once (`ThreadedStore.start_batch`: no task of its own, a hop's ~6 us less),
        else a task writing it (attachments' bytes go to files first, on a worker thread, only
        their paths into the rows)."""
        start = getattr(self.store, "start_batch", None)
        if start is not None and not self._has_bytes(writes):
            future: asyncio.Future[None] = start(self.session_id, writes)
            return future
        return asyncio.ensure_future(self._write_out(writes))

    def _has_bytes(self, writes: Sequence[StoreWrite]) -> bool:
        if self.attachments_dir is None or not self._writes.attached:
            return False  # no message with an attachment was queued: no walk over the writes
        return any(_to_store(a) for w in writes for m in written_messages(w)
                   for a in m.attachments)

    async def _write_out(self, writes: Sequence[StoreWrite]) -> None:
        if self._has_bytes(writes):
            assert self.attachments_dir is not None
            writes = await asyncio.to_thread(_by_reference, writes, self.attachments_dir)
        await write_all(self.store, self.session_id, writes)

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        """Every message so far is durable before the next request goes out (a locked store
        is waited out here); a store that failed for good stops the run."""
        writes = self._writes
        if not writes.settled(durable_only=True):  # a steady turn's tool results are written
            await writes.flush(durable_only=True)
        failure = writes.failure
        if failure is not None:
            raise SessionError(f"the session store failed, so the run stopped (session "
                               f"{self.session_id} is intact up to the failure and can be "
                               f"resumed): {failure}")

    def on_results(self, run: RunView, results: list[Message]) -> Coroutine[Any, Any, None]:
        """Tool results are durable as soon as their calls return, before anything else
        happens in the run (a process killed next resumes with them). (The flush itself, to
        be awaited: no coroutine of its own around it for the run's task to pass through.)"""
        return self._writes.flush()

    async def before_tool(self, prepared: PreparedCall, ctx: ToolContext) -> GateDecision | None:
        """A tool gate (first of all): a call that may change something is durable before the
        tool runs, so a process killed inside it resumes knowing the call was made (it is
        marked interrupted, and a repeat keeps its idempotency key). A read-only call changes
        nothing: it waits for the next write."""
        if not prepared.tool.read_only:
            ctx.record_effect = functools.partial(self._record_effect, ctx.call_id,
                                                  prepared.tool.name, ctx.idempotency_key)
            await self._writes.flush(durable_only=True)
            if self._writes.failure is not None:  # not durable: a resume could not know of it
                from loopwright.tools.execute import GateDecision

                return GateDecision(allow=False, reason=self._not_recorded())
        return None

    def _not_recorded(self) -> str:
        return (f"the session store failed, so the call was not run (it could not be recorded "
                f"first): {self._writes.failure}")

    async def _record_effect(self, call_id: str, name: str, key: str,
                             facts: dict[str, Any]) -> None:
        """Durable at once: what the call is about to change (tools/effects.py), with its key,
        which tells it from other calls with its id."""
        run = self._run
        assert run is not None
        self._writes.put_event(run.run_id, {"type": EFFECT_EVENT, "id": call_id, "name": name,
                                            **facts, "key": key}, durable=True)
        await self._writes.flush()
        if self._writes.failure is not None:  # the tool must not write what was not recorded
            raise SessionError(self._not_recorded())

    def __call__(self, event: Event) -> None:
        """The event callback: record everything but text deltas."""
        run = self._run
        if run is None or event.type in _UNRECORDED:
            return
        writes = self._writes
        if not writes.open:  # after the run's last write
            self._after_close(run, event)
            return
        # a turn's record (usage, cost) is its turn_end event, and the run's row is written
        # when it starts and ends: a run not ended is summed from its turns (store/turns.py)
        writes.put_event(run.run_id, event.to_dict() if event.type in _AS_IS
                         else self._row(event))

    def _row(self, event: Event) -> dict[str, Any]:
        """The event's stored row. The deltas are not kept: the turn's own words go with the
        run's `turn_end` row (the prompt or steering it started from, its text and reasoning),
        so a viewer shows them under the right turn whatever steering or compaction did to the
        message list."""
        if event.type in TERMINAL_TYPES:
            return _stored_row(event)
        row = event.to_dict()  # `event_to_dict`, one call fewer
        if event.type == "tool_result":
            _as_preview(row)
        elif event.type == "turn_end" and not event.agent:
            self._add_words(row)
        return row

    def _add_words(self, row: dict[str, Any]) -> None:
        said, self._turn_messages = self._turn_messages, []
        users, text, reasoning = [], [], []
        for message in said:  # user and assistant messages only (`on_message`)
            if message.role == "user":
                users.append(message.content)
            else:
                text.append(message.content)
                reasoning.append(message.reasoning or "")
        row["user"] = users
        row["text"] = "".join(text)
        row["reasoning"] = "".join(reasoning)

    def _after_close(self, run: RunView, event: Event) -> None:
        """An event after the run's last write: its own terminal event is in that write already;
        anything else (a sub-agent's late event) is written on its own."""
        if self._ended and event.type in TERMINAL_TYPES and event.agent == run.agent_tag:
            return
        self._late_write(self.store.record_events(self.session_id, run.run_id, [self._row(event)]))

    def on_compaction(self, run: RunView) -> None:
        """Compaction replaced the history: the session (same id) starts its next epoch from
        it, atomically; the messages it summarised stay stored as the session's lineage."""
        history = [m for m in run.history if m.role != "system"]
        self._writes.put(Compact(messages=history), durable=True)

    async def on_run_end(self, run: RunView, result: RunResult) -> None:
        """The run's last write: its row, its terminal event and the lease given back, in one
        transaction. The recorder is the run's last plugin (`Agent.start`), so the result is
        final here and the event is the one the loop emits next (`events.terminal_event`),
        which `__call__` then leaves out."""
        heartbeat().discard(self)
        if self._writes.open:
            self._writes.put_event(run.run_id, _stored_row(terminal_event(result, run.agent_tag)))
            self._ended = True
        self._writes.put(RecordRun(record=self._record(run, result), model=self.model,
                                   ended=True))
        folded = self._leased and self._writes.open  # given back in the run's last transaction
        if folded:
            self._writes.put(ReleaseLease(owner=self.owner))
        await self._writes.close()
        self._ended = self._ended and self._writes.failure is None  # else written late
        if folded and self._writes.failure is None:
            self._leased = False
        await self.release()  # not written with it (the store failed): given back on its own

    def _late_write(self, write: Awaitable[Any]) -> None:
        """A write after the run's queue closed (its terminal event): best effort, in the
        background, so the log is complete when the store is healthy."""
        async def guarded() -> None:
            # whatever the store raises (a store a user wrote may raise anything): no run is
            # left to report it to, and a task's exception nobody retrieves is printed raw
            with contextlib.suppress(Exception):
                await write

        task = asyncio.ensure_future(guarded())
        _LATE_WRITES.add(task)
        task.add_done_callback(_LATE_WRITES.discard)

    def _report_wait(self, run: RunView, kind: StatusKind, text: str) -> None:
        run.status(kind, text, {"session_id": self.session_id})

    def _record(self, run: RunView, result: RunResult) -> RunRecord:
        return RunRecord(run_id=run.run_id, turns=run.turn, usage=run.usage.copy(),
                         cost=result.cost, stop_reason=result.stop_reason, error=result.error)

    async def _renew(self, run: RunView, driver: asyncio.Task[Any] | None) -> bool:
        """Keep the lease while the run's task lives (a task killed without reaching
        `on_run_end` still lets go of its session within one renewal period); called by the
        event loop's heartbeat (store/heartbeat.py). False: no more renewals."""
        if driver is not None and driver.done():
            await self.release()
            return False
        if not self._writes.written:  # not taken yet: a new session's comes with the first write
            return True
        try:
            await self.store.renew(self.session_id, self.owner)
        except StoreBusy:
            return True  # the lease outlives a few missed renewals
        except LoopwrightError as exc:  # lost to another run (this one stalled past its expiry)
            self._writes.fail(run, str(exc))
            return False
        except Exception as exc:  # a store a user wrote may raise anything
            run.status("store_error", f"session {self.session_id}: {exc!r}",
                       {"session_id": self.session_id})
            return False
        return True


def _by_reference(writes: Sequence[StoreWrite], directory: Path) -> list[StoreWrite]:
    """Blocking (disk): `writes` with each attachment's bytes stored once, by SHA-256, in
    `directory`, and only its path left in the message, in appended rows and a compaction's
    alike; a path given without a digest read for the one its row records."""
    return [dataclasses.replace(w, messages=[
        dataclasses.replace(m, attachments=[a.stored(directory) for a in m.attachments])
        if any(_to_store(a) for a in m.attachments) else m for m in w.messages])
        if isinstance(w, AppendMessages | Compact) else w for w in writes]


def _to_store(attachment: Attachment) -> bool:
    """Whether `attachment` needs the disk before its row is written (`Attachment.stored`)."""
    return attachment.data is not None or attachment.undigested


def _folds_opening(store: SessionStore) -> bool:
    """Whether `store` takes a session's opening in a write batch (`OpenSession`): the
    built-in stores say so; a store a user wrote gets `open_session` or its calls."""
    return getattr(store, "opens_in_batch", False) is True


def _title(prompt: str, history: list[Message] | None) -> str:
    text = prompt.strip() or next(
        (m.content for m in history or [] if m.role == "user" and m.content.strip()), "")
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS - 1] + "…"


def _stored_row(event: Event) -> dict[str, Any]:
    """The stored form of an event: tool output and final results are in the messages already
    (a final result's messages are counted, without making the dicts of the whole history)."""
    if event.type in TERMINAL_TYPES and (result := getattr(event, "result", None)) is not None:
        row = event_to_dict(dataclasses.replace(
            event, result=dataclasses.replace(result, messages=[])))
        row["result"]["message_count"] = len(result.messages)
        del row["result"]["messages"]
        return row
    row = event_to_dict(event)
    if event.type == "tool_result":
        _as_preview(row)
    return row


def _as_preview(row: dict[str, Any]) -> None:
    """A `tool_result` row with its length and the start of its content, not all of it."""
    content = row.pop("content", "")
    row["content_chars"] = len(content)
    row["preview"] = content[:PREVIEW_CHARS]
