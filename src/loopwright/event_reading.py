"""Events back from their JSON form: a line of `loopwright run --json`, an SSE message, or an
event the session store gives back (`store.events()`, with its `run_id` and `created`, a
`tool_result` kept as a preview, a `model_call` record without its request and response, a
result with its messages counted).

Every field is checked against its class's type before an event is made, and a result's
messages as strictly as the store reads its rows (`store.rows.checked_result`): a line cut
short, edited or written by another program is an `EventFormatError` naming the event and the
field, never an event holding a field of another type. An event type this version does not
know (a newer version's) is an `UnknownEventType`, which `read_event_lines` skips with one
warning per type; keys a class does not have are left out, as a newer version may add some.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, get_args

from loopwright import events
from loopwright.messages import Usage

if TYPE_CHECKING:
    from loopwright.events import Event, ModelCallRecord


class EventFormatError(ValueError):
    """A JSON form that is not an event this version writes: which event, and what is wrong."""


class UnknownEventType(EventFormatError):
    """An event (or a `status` kind) this version does not know: a newer version's, as a rule.
    `read_event_lines` skips it with one warning; `event_type` says which."""

    def __init__(self, message: str, event_type: str) -> None:
        super().__init__(message)
        self.event_type = event_type


class SkippedEventWarning(UserWarning):
    """Warned once per event type `read_event_lines` does not know and skips."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_dict(value: Any) -> bool:
    return isinstance(value, dict)


def _or_none(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


_USAGE_KEYS = frozenset(field.name for field in dataclasses.fields(Usage))


def _is_usage(value: Any) -> bool:
    return _is_dict(value) and value.keys() <= _USAGE_KEYS and all(map(_is_int, value.values()))


# what a JSON value must be for each type an event's (or a record's) field is declared with;
# tests/test_event_reading.py checks that every declared type has its entry here
FIELD_CHECKS: dict[str, Callable[[Any], bool]] = {
    "Any": lambda value: True,
    "str": lambda value: isinstance(value, str),
    "str | None": _or_none(lambda value: isinstance(value, str)),
    "bool": lambda value: isinstance(value, bool),
    "int": _is_int,
    "int | None": _or_none(_is_int),
    "float": _is_number,
    "float | None": _or_none(_is_number),
    "dict[str, Any]": _is_dict,
    "dict[str, Any] | None": _or_none(_is_dict),
    "dict[str, Any] | str": lambda value: isinstance(value, dict | str),
    "dict[str, int]": lambda value: _is_dict(value) and all(map(_is_int, value.values())),
    "Usage": _is_usage,
    "StatusKind": lambda value: isinstance(value, str),  # a kind not known: `UnknownEventType`
    "ModelCallRecord": _is_dict,  # then read as a record
    "RunResult": _is_dict,  # then read as a result (`store.rows.checked_result`)
    "RunResult | None": _or_none(_is_dict),
}
# fields that are not part of the JSON form: the tag, and an error's exception (in-process only)
_NOT_JSON = frozenset({"type", "exception"})
_STATUS_KINDS = frozenset(get_args(events.StatusKind))


def _checked_fields(cls: type[Any], data: dict[str, Any], what: str) -> dict[str, Any]:
    """The keyword arguments of `cls` that `data` holds, each of its declared type; a required
    one missing or a value of another type is an `EventFormatError`."""
    found: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name in _NOT_JSON:
            continue
        if field.name not in data:
            if field.default is dataclasses.MISSING and \
                    field.default_factory is dataclasses.MISSING:
                raise EventFormatError(f"{what} has no {field.name}")
            continue
        value = data[field.name]
        if not FIELD_CHECKS[str(field.type)](value):
            shown = json.dumps(value, default=str)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise EventFormatError(f"{what}'s {field.name} is {shown}, not {field.type}")
        found[field.name] = value
    return found


def read_record(data: Any) -> ModelCallRecord:
    """A model call record from its JSON form (`ModelCallRecord.to_dict`). As the session's
    events keep it (without its request and response: `store.model_calls()` has them), its
    request reads back empty and its response as None."""
    if not isinstance(data, dict):
        raise EventFormatError(f"a model call record is {type(data).__name__}, not an object")
    fields = _checked_fields(events.ModelCallRecord,
                             {"request": {}, "response": None, **data}, "a model call record")
    if "usage" in fields:
        fields["usage"] = Usage(**fields["usage"])
    return events.ModelCallRecord(**fields)


def read_event(data: Any) -> Event:
    """An event from its JSON form (`event_from_dict`)."""
    from loopwright.store.rows import DECODING_ERRORS, checked_result

    if not isinstance(data, dict):
        raise EventFormatError(f"an event is {type(data).__name__}, not an object")
    kind = data.get("type")
    cls = events.BY_TYPE.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise UnknownEventType(f"an event of type {str(kind)[:60]!r}, which this version of "
                               "loopwright does not know", str(kind)[:60])
    what = f"a {kind} event"
    if kind == "tool_result" and "content" not in data and "preview" in data:
        data = {**data, "content": data["preview"]}  # as the store keeps it: its start
    fields = _checked_fields(cls, data, what)
    if kind == "status" and fields["kind"] not in _STATUS_KINDS:
        status = fields["kind"][:60]
        raise UnknownEventType(f"a status event of kind {status!r}, which this version of "
                               "loopwright does not know", f"status {status}")
    if fields.get("result") is not None:
        try:
            fields["result"] = checked_result(fields["result"], stored=False)
        except DECODING_ERRORS as exc:
            why = (str(exc) or type(exc).__name__)[:200]
            raise EventFormatError(f"{what}'s result is damaged ({why})") from None
    if "record" in fields:
        fields["record"] = read_record(fields["record"])
    event: Event = cls(**fields)
    return event


def read_event_lines(lines: Iterable[str]) -> Iterator[Event]:
    """The events of `loopwright run --json` output (one JSON object a line; blank lines are
    passed over). A line that is not an event this version writes is an `EventFormatError`
    naming its number; an event type this version does not know is skipped, with one
    `SkippedEventWarning` per type."""
    warned: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield read_event(json.loads(line))
        except UnknownEventType as exc:
            if exc.event_type not in warned:
                warned.add(exc.event_type)
                warnings.warn(SkippedEventWarning(f"line {number}: {exc}; skipped (and any "
                                                  "more of that type)"), stacklevel=2)
        except (ValueError, RecursionError) as exc:
            raise EventFormatError(f"line {number}: {exc}") from None
