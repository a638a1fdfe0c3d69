"""Rows of the session tables, both ways, for both stores: what a message, an event, a run or a
turn is written as, and stored rows back into objects. A damaged row (JSON cut by a crash or a
full disk, a field of the wrong type, a row some other program wrote) is a `SessionError` naming
the session, the row and what to do — never a raw decoding error."""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, get_args

import orjson

from loopwright.attachments import SHA256_HEX
from loopwright.errors import SessionError
from loopwright.messages import Message, Role, Usage
from loopwright.result import RunResult, StopReason

if TYPE_CHECKING:
    from loopwright.events import ModelCallRecord
    from loopwright.store import RunRecord

USAGE_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                 "reasoning_tokens", "requests")
# what a second write of a run's or a turn's row updates (both stores, SQL they both speak): a
# run's row is written when it starts and again when it ends (store/turns.py)
RUN_ON_CONFLICT = (
    "ON CONFLICT (session_id, id) DO UPDATE SET ended = excluded.ended, "
    "stop_reason = excluded.stop_reason, error = excluded.error, turns = excluded.turns, "
    "cost = excluded.cost, " + ", ".join(f"{c} = excluded.{c}" for c in USAGE_COLUMNS))
TURN_ON_CONFLICT = ("ON CONFLICT (session_id, run_id, turn) DO UPDATE SET cost = excluded.cost, "
                    + ", ".join(f"{c} = excluded.{c}" for c in USAGE_COLUMNS))
# A turn's rows are encoded by orjson: its events row (~1.4 KB: the model call's record, the
# tool's result, the turn's end) took `json` ~17 µs, orjson ~1.4 µs, of a store thread's ~85 µs
# a turn. What orjson refuses (an int past 64 bits, a key that is not a string, a lone
# surrogate) is encoded by `json`, all in ASCII: a lone surrogate (a provider may send
# "\ud800") as its escape, since no text column of either store can hold it raw. Dataclasses
# and datetimes go to `default` as with `json`; a float NaN or infinity is written as null
# (json wrote NaN, which is not JSON).
_AS_JSON_DOES = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
# made once: `json.dumps` with arguments builds an encoder on every call
_MESSAGE_JSON = json.JSONEncoder(separators=(",", ":"))
_RECORD_JSON = json.JSONEncoder(default=str, separators=(",", ":"))
# what a text column cannot hold: a lone surrogate (UTF-8 cannot encode one) and NUL
# (PostgreSQL's text refuses it)
_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """`text` as a text column holds it: each lone surrogate and NUL as U+FFFD (where the exact
    text is in the row's JSON too, or the column is only shown)."""
    return text if is_storable(text) else _UNSTORABLE.sub("\ufffd", text)


def is_storable(text: str) -> bool:
    """Whether a text column holds `text` as it is (ASCII: one search for NUL, at C speed)."""
    return "\x00" not in text and (text.isascii() or _SURROGATE.search(text) is None)


def message_row(message: Message) -> tuple[str, str, str]:
    """(role, content, data): the message's other fields as JSON in `data`, and its content
    too when the column cannot hold it as it is (`message_at` reads it from there)."""
    fields = message.to_dict()
    del fields["role"], fields["content"]
    content = message.content
    if not is_storable(content):
        fields["content"], content = content, storable(content)
    try:
        data = _dumps(fields, _MESSAGE_JSON, None)
    except (TypeError, ValueError) as exc:
        raise SessionError(f"cannot store a {message.role} message: {exc}") from exc
    return message.role, content, data


BATCH = "batch"  # the `type` of an events row holding several events (a JSON array)
# the `type` of an events row (SQLite) holding a model call record written before schema v7, when
# the record had a table of its own and its event was stored slim; not an event of the log
CALL_RECORD = "call_record"


def events_row(session_id: str, run_id: str, now: float, events: list[dict[str, Any]]
               ) -> tuple[Any, ...]:
    """One row for the events of a run written together (one transaction: one turn, as a
    rule), so a turn costs one event row and one JSON encoding: several events as a JSON array
    in `data` with the type `batch`; a single event as its own object, with its type and, for a
    tool event, the call it is about in columns of their own."""
    if len(events) != 1:
        return (session_id, run_id, now, BATCH, None, None, None, None, None, record_json(events))
    event = events[0]
    kind = event.get("type", "")
    tool = kind in ("tool_call", "tool_result")
    is_error = event.get("is_error")
    return (session_id, run_id, now, kind, storable_value(event.get("id")) if tool else None,
            storable_value(event.get("name")) if tool else None,
            None if is_error is None else int(is_error),
            event.get("duration"), event.get("content_chars"), record_json(event))


def record_json(value: Any) -> str:
    """An event or a model call record as compact JSON (what JSON cannot hold, as text)."""
    return _dumps(value, _RECORD_JSON, str)


def _dumps(value: Any, slow: json.JSONEncoder, default: Callable[[Any], Any] | None) -> str:
    try:
        return orjson.dumps(value, default=default, option=_AS_JSON_DOES).decode()
    except TypeError:  # refused by orjson (see above): as json writes it, or json's error
        return slow.encode(value)


def storable_value(value: Any) -> Any:
    """`storable` text (any other value as it is), for a column that is only shown or that
    copies what the row's JSON holds exactly."""
    return storable(value) if isinstance(value, str) else value


def run_row(session_id: str, record: RunRecord, model: str, ended: bool, now: float
            ) -> tuple[Any, ...]:
    """A run's row, in the column order of the `runs` upserts."""
    usage = record.usage.to_dict()
    return (record.run_id, session_id, model, os.getpid(), now, now if ended else None,
            record.stop_reason if ended else None, storable_value(record.error), record.turns,
            *(usage[c] for c in USAGE_COLUMNS), record.cost)


def turn_row(session_id: str, run_id: str, turn: int, usage: Usage, cost: float | None,
             now: float) -> tuple[Any, ...]:
    """A turn's row, in the column order of the `turns` upserts."""
    values = usage.to_dict()
    return (session_id, run_id, turn, now, *(values[c] for c in USAGE_COLUMNS), cost)

_Read = TypeVar("_Read")  # what `readable` makes of a row
_Row = TypeVar("_Row", bound=Sequence[Any])
# what decoding a row raises: json on cut text (or, RecursionError, on arrays nested past its
# depth), from_dict on odd shapes
DECODING_ERRORS = (ValueError, TypeError, KeyError, AttributeError, RecursionError)


class DamagedRowError(SessionError):
    """A row the store holds but cannot read (not a store it cannot reach): what a listing or a
    search skips and reports (`skip_damaged`) where reading the one session fails with it."""


class DamagedSessionWarning(UserWarning):
    """Warned by a store's `list_sessions` or `search` for each damaged session it skipped, when
    the caller passed no `damaged` list to collect them in (the return type stays the list of
    good ones, for callers written before damaged sessions were skipped)."""


@dataclass(frozen=True)
class DamagedSession:
    """A session a listing or a search skipped: its id (None when the id itself is damaged) and
    the error that says what to do."""

    session_id: str | None
    error: str

    def to_dict(self) -> dict[str, str | None]:
        return {"id": self.session_id, "error": self.error}


def skip_damaged(row_id: Any, exc: DamagedRowError, damaged: list[DamagedSession] | None
                 ) -> None:
    """Report one damaged session a listing or a search skipped: into `damaged` (once per
    session: a search may meet it in several messages), or as a `DamagedSessionWarning`."""
    found = DamagedSession(row_id if isinstance(row_id, str) and row_id else None, str(exc))
    if damaged is None:
        warnings.warn(DamagedSessionWarning(found.error), stacklevel=3)
    elif found not in damaged:
        damaged.append(found)


def readable(rows: Iterable[Sequence[Any]], read: Callable[[Sequence[Any]], _Read], limit: int,
             damaged: list[DamagedSession] | None) -> list[_Read]:
    """What `read` makes of the first `limit` rows it can read (each row's first column the
    session's id); each damaged one skipped and reported (`skip_damaged`). `rows` is taken
    only as far as needed: a cursor with no LIMIT reads past the damaged ones. (The one home
    of that rule, for both stores: PostgreSQL's pages go through `readable_page`.)"""
    found: list[_Read] = []
    for row in rows:
        if len(found) >= limit:
            break
        try:
            found.append(read(row))
        except DamagedRowError as exc:
            skip_damaged(row[0], exc, damaged)
    return found


async def readable_page(rows: Sequence[_Row], read: Callable[[_Row], Awaitable[_Read]],
                        damaged: list[DamagedSession] | None) -> list[_Read]:
    """`readable` of a page of rows (a query's LIMIT: every row of it is wanted) for a `read`
    that is awaited: each row read in order, then counted and skipped as `readable` does."""
    outcomes: list[tuple[Any, _Read | DamagedRowError]] = []
    for row in rows:
        try:
            outcomes.append((row[0], await read(row)))
        except DamagedRowError as exc:
            outcomes.append((row[0], exc))
    return readable(outcomes, _outcome, len(outcomes), damaged)


def _outcome(row: Sequence[Any]) -> Any:
    if isinstance(row[1], DamagedRowError):
        raise row[1]
    return row[1]


def damaged(session_id: str, row: str, exc: BaseException) -> DamagedRowError:
    """The error for one damaged row of a session."""
    why = (str(exc) or type(exc).__name__)[:200]
    return DamagedRowError(
        f"session {session_id}: {row} is damaged ({why}); the store holds a row cut short or "
        "not written by loopwright, so the session cannot be read as it is. Continue in a new "
        f"session, or delete this one with `loopwright sessions rm {session_id}`")


# what both stores read of a session's row, in the order `checked_session_row` checks it
SESSION_COLUMNS = ("id, parent_id, title, model, cwd, created, updated, lock_owner, lock_pid, "
                   "lock_host, lock_expires, epoch, base_url, api_mode")
_LATEST = 1e11  # seconds since 1970 (the year 5138): no time loopwright wrote, nor one to print
_LARGEST = 1 << 63  # a count past a signed 64-bit integer was not written by loopwright


def is_time(value: Any) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value) and 0 <= value < _LATEST)


def is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _LARGEST


def _is_text(value: Any) -> bool:
    return isinstance(value, str)


def _is_optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


_SESSION_CHECKS = (
    _is_text, _is_optional(_is_text), _is_text, _is_text, _is_text, is_time, is_time,
    _is_optional(_is_text), _is_optional(is_count), _is_optional(_is_text),
    _is_optional(lambda value: isinstance(value, int | float) and not isinstance(value, bool)),
    is_count, _is_text, _is_text)
_RUN_CHECKS: dict[str, Callable[[Any], bool]] = {
    "id": _is_text, "started": is_time, "ended": _is_optional(is_time),
    "stop_reason": _is_optional(_is_text), "turns": is_count,
    "cost": _is_optional(lambda value: isinstance(value, int | float)
                         and not isinstance(value, bool) and math.isfinite(value)),
    **dict.fromkeys(USAGE_COLUMNS, is_count)}


def checked_session_row(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A sessions row (its `SESSION_COLUMNS`) as read, once each field is of its type: a
    time a time, a count a count, text text (SQLite keeps whatever a program wrote)."""
    for name, value, check in zip(SESSION_COLUMNS.split(", "), row, _SESSION_CHECKS,
                                  strict=True):
        if not check(value):
            sid = row[0] if isinstance(row[0], str) and row[0] else "(one with no id)"
            raise damaged_session_row(sid, name, value)
    return row


def damaged_session_row(session_id: str, name: str, value: Any) -> DamagedRowError:
    """The error for a field of the session's row that is not of its type."""
    return damaged(session_id, "its row of the sessions table",
                   ValueError(f"{name} holds {_shown(value)}"))


def checked_runs(session_id: str, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session's runs rows as read, once each field `run_totals` and the CLI use is of its
    type."""
    for run in runs:
        for name, check in _RUN_CHECKS.items():
            if not check(run.get(name)):
                raise damaged(session_id, f"the row of run {_shown(run.get('id'))}",
                              ValueError(f"{name} holds {_shown(run.get(name))}"))
    return runs


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_ROLES = frozenset(get_args(Role))
_STOP_REASONS = frozenset(get_args(StopReason))


def _is_optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_call(value: Any) -> bool:
    return (isinstance(value, dict) and value.keys() == _CALL_KEYS
            and all(isinstance(part, str) for part in value.values()))


def _is_attachment(value: Any) -> bool:
    """An attachment as `Attachment.to_dict` writes it: its bytes in one place."""
    return (isinstance(value, dict) and value.keys() <= _ATTACHMENT_KEYS
            and value.get("kind") in ("image", "document")
            and all(isinstance(part, str) for part in value.values())
            and len(value.keys() & {"path", "url", "base64"}) == 1
            and ("sha256" not in value
                 or ("path" in value and SHA256_HEX.fullmatch(value["sha256"]) is not None)))


def _is_list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, list) and all(check(item) for item in value)


_CALL_KEYS = frozenset({"id", "name", "arguments"})
_ATTACHMENT_KEYS = frozenset({"kind", "media_type", "path", "url", "name", "base64", "sha256"})
# each key `message_row` may write into a message's `data`, with what its value must be: a
# row holding any other key, or a value of another type, was not written by loopwright, and
# reading it leniently would send the model what the row never said (`"is_error": "false"`
# read as true, a result's call id lost so the call looks unanswered)
_MESSAGE_FIELDS: dict[str, Callable[[Any], bool]] = {
    "content": _is_text, "tool_calls": _is_list_of(_is_call),
    "tool_call_id": _is_optional_text, "name": _is_optional_text,
    "reasoning": _is_optional_text, "is_error": lambda value: isinstance(value, bool),
    "provider_data": lambda value: isinstance(value, dict),
    "attachments": _is_list_of(_is_attachment), "marks": _is_list_of(_is_text)}


def message_at(session_id: str, seq: int, role: str, content: str, data: str) -> Message:
    """A stored message row (`seq`: its number in the session) back as a `Message`, once
    every field of it is what `message_row` writes (`damaged` otherwise)."""
    try:
        if not isinstance(content, str):
            raise ValueError(f"role {_shown(role)} with content of type {type(content).__name__}")
        fields = json.loads(data) if data != "{}" else {}
        if not isinstance(fields, dict):
            raise ValueError(f"data holds {type(fields).__name__}, not an object")
        message = checked_message(role, fields, content)
    except DECODING_ERRORS as exc:
        raise damaged(session_id, f"message {seq}", exc) from None
    for attachment in message.attachments:  # a warning that one is gone names the session
        attachment.recorded_in(session_id)
    return message


def checked_message(role: Any, fields: dict[str, Any], content: str = "") -> Message:
    """A message from its role and its other fields as `Message.to_dict` writes them (`content`:
    its text when `fields` holds none), once every field is what that writes; raises one of
    `DECODING_ERRORS` naming the first that is not. A stored row's (`message_at`) and a
    run's result's (`checked_result`)."""
    if role not in _ROLES:
        raise ValueError(f"role {_shown(role)}")
    for key, value in fields.items():
        check = _MESSAGE_FIELDS.get(key)
        if check is None or not check(value):
            raise ValueError(f"data holds {_shown(key)}: {_shown(value)}")
    if role == "tool" and not isinstance(fields.get("tool_call_id"), str):
        raise ValueError("a tool result without the id of its call")
    # the exact text when a row's column holds a storable form of it (`message_row`)
    return Message.from_dict({"content": content, **fields, "role": role})


def keyed_messages(session_id: str, rows: Iterable[Sequence[Any]]) -> list[Message]:
    """The messages of a session's rows in order, each row `(n, session, seq, role, content,
    data)` with `n` the seq its place says (SQLite: its key; PostgreSQL: its seq). A session's
    messages are numbered one after another and never removed one alone, so a row whose own
    seq or session differs was moved or written by something else, and a gap is a row lost
    (`damaged`)."""
    found: list[Message] = []
    expected = None
    for at, owner, seq, *fields in rows:
        if expected not in (None, at):
            raise damaged(session_id, f"message {expected}", ValueError("its row is missing"))
        if seq != at or owner != session_id:
            raise damaged(session_id, f"message {at}", ValueError(
                f"its row says seq {_shown(seq)} of session {_shown(owner)}"))
        found.append(message_at(session_id, seq, *fields))
        expected = at + 1
    return found


def events_at(session_id: str, run_id: str, created: float, data: str
              ) -> list[dict[str, Any]]:
    """A stored events row back as its events (one, or a batch's), each with `run_id` and
    `created` added."""
    try:
        if not is_time(created) or not _is_text(run_id):
            raise ValueError(f"created holds {_shown(created)}, run_id {_shown(run_id)}")
        found = json.loads(data)
        events = found if isinstance(found, list) else [found]
        for event in events:  # every event loopwright writes is an object that says its type
            if not isinstance(event, dict) or not _is_text(event.get("type")):
                raise ValueError(f"an event of no type: {_shown(event)}")
        return [{**event, "run_id": run_id, "created": created} for event in events]
    except DECODING_ERRORS as exc:
        raise damaged(session_id, f"an event of run {str(run_id)[:40]}", exc) from None


def call_at(session_id: str, data: str) -> ModelCallRecord:
    """A stored model call record (JSON) back as a `ModelCallRecord`."""
    try:
        found = json.loads(data)
    except DECODING_ERRORS as exc:
        raise damaged(session_id, "a model call record", exc) from None
    return record_at(session_id, found)


def record_at(session_id: str, record: Any) -> ModelCallRecord:
    """A model call record as JSON decoded it back as a `ModelCallRecord`."""
    from loopwright.events import ModelCallRecord

    try:
        return ModelCallRecord.from_dict(record)
    except DECODING_ERRORS as exc:
        raise damaged(session_id, "a model call record", exc) from None


def _is_finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_usage(value: Any) -> bool:
    return (isinstance(value, dict) and value.keys() <= set(USAGE_COLUMNS)
            and all(map(is_count, value.values())))


# each key a stored terminal event's `result` may hold (`RunResult.to_dict`, its messages
# counted by the recorder), with what its value must be; `_ANSWER_NEEDS` are never left out
_ANSWER_FIELDS: dict[str, Callable[[Any], bool]] = {
    "output": _is_text, "text": _is_text, "turns": is_count, "message_count": is_count,
    "stop_reason": lambda value: value in _STOP_REASONS,
    "usage": _is_usage, "cost": _is_optional(_is_finite),
    "session_id": _is_optional_text, "error": _is_optional_text, "diff": _is_text,
    "grade": lambda value: value is None or isinstance(value, dict),
    "side_usage": lambda value: isinstance(value, dict)}
_ANSWER_NEEDS = frozenset({"output", "stop_reason", "turns"})
# what a run's own event may hold besides: any output (a structured output's JSON), its messages
_EVENT_RESULT_FIELDS: dict[str, Callable[[Any], bool]] = {
    **_ANSWER_FIELDS, "output": lambda value: True,
    "messages": _is_list_of(lambda value: isinstance(value, dict))}


def answer_at(session_id: str, result: Any) -> RunResult[Any]:
    """A run's result as its stored terminal event holds it, for a run with no `output_type`
    (a sub-agent's: its output is text), once every field is what `RunResult.to_dict` writes
    (`damaged` otherwise: a lenient read gave the parent model an output of another type, or
    failed on a missing key with a raw KeyError). Its messages are the session's own."""
    try:
        return checked_result(result, stored=True)
    except DECODING_ERRORS as exc:
        raise damaged(session_id, "its last run's result", exc) from None


def checked_result(result: Any, *, stored: bool) -> RunResult[Any]:
    """A terminal event's `result` back as a `RunResult`, once every field is what
    `RunResult.to_dict` writes; raises one of `DECODING_ERRORS` naming the first that is not.
    `stored`: as the store keeps a sub-agent's (text output, its messages counted); otherwise
    as any run's event carries it (`event_from_dict`: the output any JSON a structured output
    gives, the messages listed or counted)."""
    if not isinstance(result, dict):
        raise ValueError(f"result holds {type(result).__name__}, not an object")
    if missing := _ANSWER_NEEDS - result.keys():
        raise ValueError(f"result has no {', '.join(sorted(missing))}")
    for key, value in result.items():
        check = _ANSWER_FIELDS.get(key) if stored else _EVENT_RESULT_FIELDS.get(key)
        if check is None or not check(value):
            raise ValueError(f"result holds {_shown(key)}: {_shown(value)}")
    fields = {key: value for key, value in result.items()
              if key not in ("message_count", "messages")}
    found = RunResult.from_dict(fields)
    found.messages = [_result_message(message) for message in result.get("messages", ())]
    return found


def _result_message(message: dict[str, Any]) -> Message:
    """A message of a result, as `Message.to_dict` writes it (its role among its fields)."""
    fields = dict(message)
    return checked_message(fields.pop("role", None), fields)
