"""A run's store writes as data, so the recorder can hand a store all it has queued at once:
`write_batch` writes them in one transaction (for SQLite, in one hop to its thread).

A store without `write_batch` (one a user wrote against `SessionStore`) gets one call per write,
in order (`write_all`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopwright.events import maker
from loopwright.messages import Message, Usage
from loopwright.store import RunRecord
from loopwright.store.turns import is_turn_end

if TYPE_CHECKING:
    from loopwright.store import SessionStore


@dataclass(frozen=True, kw_only=True, slots=True)
class AppendMessages:
    messages: list[Message]


@dataclass(frozen=True, kw_only=True, slots=True)
class Compact:
    """Start the session's next epoch with `messages` (see `SessionStore.compact`)."""

    messages: list[Message]


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordEvents:
    run_id: str
    events: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordRun:
    record: RunRecord
    model: str = ""
    ended: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordTurn:
    run_id: str
    turn: int
    usage: Usage
    cost: float | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ReleaseLease:
    """Give the run's write lease on the session back (`SessionStore.release`): a run's last
    write, so its end costs one transaction rather than two."""

    owner: str


@dataclass(frozen=True, kw_only=True, slots=True)
class OpenSession:
    """Create the session and take its write lease for `owner` (`open_session`, with
    `fields`), as the first part of a run's first write: a run that made its session's id up
    has no session to find or resume, so its opening needs no transaction of its own."""

    owner: str
    fields: dict[str, Any]


# the writes a steady turn queues, made without calling their classes (events.py: `maker`)
new_append_messages = maker(AppendMessages)
new_record_events = maker(RecordEvents)

StoreWrite = (AppendMessages | Compact | OpenSession | RecordEvents | RecordRun | RecordTurn
              | ReleaseLease)


def written_messages(write: StoreWrite) -> list[Message]:
    """The messages `write` puts in the session's rows (appended, or a compaction's next
    epoch): what has its attachments stored by reference before it is written."""
    return write.messages if isinstance(write, AppendMessages | Compact) else []


# where `merged` puts each kind of write
_RANK: dict[type, int] = {OpenSession: 0, AppendMessages: 1, Compact: 1, RecordRun: 2,
                          RecordTurn: 3, RecordEvents: 4, ReleaseLease: 5}


def merged(writes: Sequence[StoreWrite]) -> list[StoreWrite]:
    """The same writes in fewer statements: a session's opening first, then messages and
    compactions in their order (neighbouring messages joined), then each run's newest record
    (an upsert: it says all the older ones said), each turn's, and each run's events joined; a
    lease given back goes last. One transaction takes them all, so only the order within a
    table matters."""
    if _already_merged(writes):
        return list(writes)  # a steady turn's batch: its messages, then its events
    opening: list[OpenSession] = []
    history: list[AppendMessages | Compact] = []
    events: dict[str, list[dict[str, Any]]] = {}
    runs: dict[str, RecordRun] = {}
    turns: dict[tuple[str, int], RecordTurn] = {}
    releases: dict[str, ReleaseLease] = {}
    for write in writes:
        if isinstance(write, AppendMessages):
            last = history[-1] if history else None
            if isinstance(last, AppendMessages):
                history[-1] = AppendMessages(messages=[*last.messages, *write.messages])
            else:
                history.append(write)
        elif isinstance(write, RecordEvents):
            events.setdefault(write.run_id, []).extend(write.events)
        elif isinstance(write, RecordRun):
            runs[write.record.run_id] = write
        elif isinstance(write, RecordTurn):
            turns[(write.run_id, write.turn)] = write
        elif isinstance(write, ReleaseLease):
            releases[write.owner] = write
        elif isinstance(write, OpenSession):
            opening.append(write)
        else:
            history.append(write)
    return [*opening, *history, *runs.values(), *turns.values(),
            *(RecordEvents(run_id=run_id, events=rows) for run_id, rows in events.items()
              if rows), *releases.values()]


def _already_merged(writes: Sequence[StoreWrite]) -> bool:
    """Whether `writes` are as `merged` gives them: at most two, of different kinds, in its
    order, and no events write that is empty (left out)."""
    if len(writes) > 2:
        return False
    if not writes:
        return True
    first, last = writes[0], writes[-1]
    if ((isinstance(first, RecordEvents) and not first.events)
            or (isinstance(last, RecordEvents) and not last.events)):
        return False
    return first is last or _RANK[type(first)] < _RANK[type(last)]


def with_turns(writes: Sequence[StoreWrite]) -> list[StoreWrite]:
    """`writes` (already `merged`) and, before their events, a `RecordTurn` for each of the
    run's own `turn_end` events among them, for a store that keeps a table of turns (one of a
    run's turns recorded both ways is written once, from its event)."""
    derived = {(w.run_id, int(event["turn"])): RecordTurn(
        run_id=w.run_id, turn=int(event["turn"]), usage=_usage(event.get("usage")),
        cost=event.get("cost"))
        for w in writes if isinstance(w, RecordEvents) for event in w.events
        if is_turn_end(event)}
    if not derived:
        return list(writes)
    kept = [w for w in writes
            if not (isinstance(w, RecordTurn) and (w.run_id, w.turn) in derived)]
    first_events = next((n for n, w in enumerate(kept) if isinstance(w, RecordEvents)),
                        len(kept))
    return [*kept[:first_events], *derived.values(), *kept[first_events:]]


def _usage(fields: Any) -> Usage:
    try:
        return Usage(**fields) if isinstance(fields, dict) else Usage()
    except TypeError:
        return Usage()


async def write_all(store: SessionStore, session_id: str, writes: Sequence[StoreWrite]) -> None:
    """Write `writes` in order: in one transaction when the store has `write_batch`."""
    batch = getattr(store, "write_batch", None)
    if batch is not None:
        await batch(session_id, writes)
        return
    for write in with_turns(merged(writes)):
        await _write_one(store, session_id, write)


async def _write_one(store: SessionStore, session_id: str, write: StoreWrite) -> None:
    if isinstance(write, AppendMessages):
        await store.append_many(session_id, write.messages)
    elif isinstance(write, Compact):
        await store.compact(session_id, write.messages)
    elif isinstance(write, RecordEvents):
        await store.record_events(session_id, write.run_id, write.events)
    elif isinstance(write, RecordRun):
        await store.record_run(session_id, write.record, model=write.model, ended=write.ended)
    elif isinstance(write, ReleaseLease):
        await store.release(session_id, write.owner)
    elif isinstance(write, RecordTurn):
        await store.record_turn(session_id, write.run_id, write.turn, write.usage, write.cost)
    else:  # OpenSession: queued only for a store whose write_batch takes it (opens_in_batch)
        raise TypeError(f"{type(write).__name__} needs a store's write_batch")
