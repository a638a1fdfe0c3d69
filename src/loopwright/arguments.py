"""Tool-call arguments as a model writes them: parsed, broken JSON repaired, bounded.

The bottom of the stack (below `messages`): history keeps every call's arguments as valid JSON
(`storable_arguments`), the wire adapters send them, text calls are read with these scanners,
and the executor (`tools/execute.py`) validates what comes out against the tool's schema, with
the errors of `tools/argument_errors.py`. Unrecoverable arguments never run a tool with `{}`.
Arguments come from the model, so every step is bounded: one linear scan measures nesting and
closes what a cut-off object left open, json-repair (superlinear) only sees small inputs, and
large inputs are parsed in a worker thread (`parse_arguments_async`).
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_NESTING = 100
"""Deepest bracket nesting accepted in arguments; deeper input would exhaust the recursion limit
of every JSON parser (and of pydantic) on the way."""
MAX_REPAIR_CHARS = 16_000
"""Largest broken input handed to json-repair, whose cost grows faster than the input."""
OFF_LOOP_CHARS = 32_000
"""Arguments longer than this are parsed in a worker thread, never on the event loop."""

_FENCE_LANGUAGES = ("json", "JSON", "javascript", "js", "python")
_TOKENS = re.compile(r"[\"'\\{}\[\]]")
_OPENERS = {"{": "}", "[": "]"}


class ArgumentsError(ValueError):
    """The arguments could not be turned into a valid object for the tool."""


@dataclass(kw_only=True, slots=True)
class ParsedArguments:
    value: dict[str, Any]
    repaired: bool = False


def parse_arguments(raw: str | dict[str, Any] | None) -> ParsedArguments:
    """Turn a model's raw arguments into a dict, repairing what can be repaired.

    Accepts: valid JSON, `""`/whitespace (no arguments), double-encoded JSON strings, code fences,
    Python-literal dicts, trailing commas, single quotes and prose around the object.
    Raises `ArgumentsError` when nothing object-like can be recovered, and for a number JSON
    does not have (`NaN`, `Infinity`, `1e999`: Python's parser takes them).
    """
    parsed = _parse(raw)
    _check_finite(parsed.value)
    return parsed


def _parse(raw: str | dict[str, Any] | None) -> ParsedArguments:
    if raw is None:
        return ParsedArguments(value={})
    if isinstance(raw, dict):
        _check_value_depth(raw)
        return ParsedArguments(value=raw)
    text = raw.strip()
    if not text:
        return ParsedArguments(value={})
    try:
        value = loads_bounded(text)
    except ArgumentsError:
        raise
    except ValueError:
        return _repair(text)
    if isinstance(value, str):  # double-encoded: "{\"a\": 1}"
        inner = parse_arguments(value)
        return ParsedArguments(value=inner.value, repaired=True)
    if isinstance(value, dict):
        return ParsedArguments(value=value)
    if value is None:  # `null`: some servers send it for a call without arguments
        return ParsedArguments(value={}, repaired=True)
    raise ArgumentsError(f"expected a JSON object, got {_json_kind(value)}: {text[:120]}")


async def parse_arguments_async(raw: str | dict[str, Any] | None) -> ParsedArguments:
    """`parse_arguments`, in a worker thread when the input is large enough to be felt."""
    if isinstance(raw, str) and len(raw) > OFF_LOOP_CHARS:
        return await asyncio.to_thread(parse_arguments, raw)
    return parse_arguments(raw)


def loads_bounded(text: str) -> Any:
    """`json.loads`, refusing (with `ArgumentsError`, a `ValueError`) nesting deeper than
    `MAX_NESTING` before any recursive parser sees it. Use it for any JSON a model wrote."""
    check_nesting(text)
    if text[:1] == "{" and text[-1:] == "}":  # the usual arguments: one object, nothing around
        try:
            value, end = _scan_once(text, 0)
        except StopIteration:
            return json.loads(text)  # its error
        if end == len(text):
            return value
    return json.loads(text)


# what `json.loads` runs under its three Python frames (`loads`, `decode`, `raw_decode`; one
# call or two a tool call): text that is one object, no space or BOM around it, gives the same
# value or error through it directly
_scan_once: Callable[[str, int], tuple[Any, int]] = (
    json.JSONDecoder().scan_once)  # type: ignore[attr-defined]


SMALL_JSON_CHARS = 4_000
"""Longest text `small_json_object` parses: replies compared with call arguments are short."""


def small_json_object(text: str) -> dict[str, Any] | None:
    """`text` as a JSON object when it is one of at most `SMALL_JSON_CHARS` characters (outer
    space aside), else None: for comparing a reply's text with call arguments."""
    text = text.strip()
    if not text.startswith("{") or len(text) > SMALL_JSON_CHARS:
        return None
    try:
        value = loads_bounded(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def check_nesting(text: str) -> None:
    """`ArgumentsError` when brackets outside strings nest deeper than `MAX_NESTING`."""
    if text.count("{") + text.count("[") <= MAX_NESTING:  # cheap: cannot be too deep
        return
    if scan(text, stop_deeper_than=MAX_NESTING).deepest > MAX_NESTING:
        raise ArgumentsError(_too_deep_message())


def _too_deep_message() -> str:
    return (f"the arguments nest deeper than {MAX_NESTING} levels of brackets; send a flatter "
            "JSON object")


def _check_finite(value: dict[str, Any]) -> None:
    """`ArgumentsError` for a NaN or infinite number anywhere in `value`: a tool would run with
    it, and history would keep it as text no other parser reads (llama.cpp, which parses every
    call of the history, refused every later request; Anthropic's `input` went out as invalid
    JSON). Iterative; `value` is already bounded in depth."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in pairs:
            if isinstance(child, dict | list):
                stack.append((child, f"{path}.{key}" if path else str(key)))
            elif type(child) is float and not math.isfinite(child):
                raise non_finite_error(child, f"{path}.{key}" if path else str(key))


def non_finite_error(number: complex, where: str) -> ArgumentsError:
    """The error for a NaN or infinite number at `where` (dotted, as the model sent it:
    `points.2.x`), whether written as JSON's missing literal or as text a tool's `float`
    parameter reads so (`tools.finite`)."""
    return ArgumentsError(f"the arguments hold a number JSON does not have ({number}) in "
                          f"{where!r}: send a finite number, or null")


def _check_value_depth(value: Any) -> None:
    """The same limit for arguments that arrive already parsed (a dict); iterative."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_NESTING:
            raise ArgumentsError(_too_deep_message())
        children = item.values() if isinstance(item, dict) else item if isinstance(
            item, list | tuple) else ()
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list | tuple))


@dataclass(kw_only=True, slots=True)
class Scan:
    """What one pass over possibly broken JSON (or Python-literal) text found."""

    deepest: int = 0
    open_brackets: str = ""  # still open at the end, outermost first
    open_quote: str = ""  # the quote of a string left open at the end, if any


def scan(text: str, *, stop_deeper_than: int | None = None) -> Scan:
    """One linear pass: bracket depth outside strings (JSON or Python quotes, backslash escapes).
    Only quotes, backslashes and brackets are visited, so plain text costs C speed."""
    result = Scan()
    stack: list[str] = []
    quote = ""
    skip_at = -1  # position of a character escaped by a backslash
    for match in _TOKENS.finditer(text):
        ch, at = match.group(), match.start()
        if at == skip_at:
            continue
        if quote:
            if ch == "\\":
                skip_at = at + 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in _OPENERS:
            stack.append(ch)
            result.deepest = max(result.deepest, len(stack))
            if stop_deeper_than is not None and result.deepest > stop_deeper_than:
                break
        elif ch in "}]" and stack:
            stack.pop()
    result.open_brackets = "".join(stack)
    result.open_quote = quote
    return result


def is_complete_json(raw: str) -> bool:
    """True when the text is a whole JSON value as it stands (not cut off)."""
    if not raw.strip():
        return True
    try:
        loads_bounded(raw)
    except ValueError:
        return False
    return True


def _strip_fence(text: str) -> str:
    """The inside of a Markdown code fence around the arguments (linear: no regex backtracking)."""
    if not (text.startswith("```") and text.endswith("```") and len(text) >= 6):
        return text
    inner = text[3:-3]
    first, newline, rest = inner.partition("\n")
    if first.strip() in _FENCE_LANGUAGES:
        inner = rest if newline else ""
    elif first.strip() and any(first.strip().startswith(lang + " ") for lang in _FENCE_LANGUAGES):
        inner = first.strip().split(" ", 1)[1] + newline + rest
    return inner.strip()


def _repair(text: str) -> ParsedArguments:
    """Recover an object from broken arguments, from the most exact strategy to the loosest."""
    text = _strip_fence(text)
    check_nesting(text)
    value = _loads_lenient(text)  # raw control characters (unescaped newlines) inside strings
    if isinstance(value, str):
        return ParsedArguments(value=parse_arguments(value).value, repaired=True)
    if isinstance(value, dict):
        return ParsedArguments(value=value, repaired=True)
    start = text.find("{")
    if start < 0:
        raise ArgumentsError(f"no JSON object found in the arguments: {text[:120]!r}")
    try:  # prose before or after one well-formed object
        value, _ = _DECODER.raw_decode(text, start)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return ParsedArguments(value=value, repaired=True)
    end = balanced_end(text, start)
    if end is None:
        cut = _cut_off_problem(text[start:])
        if cut:
            raise ArgumentsError(cut)
        closed = _close_cut_off(text[start:])  # linear: the common case of a cut-off object
        if closed is not None:
            return ParsedArguments(value=closed, repaired=True)
    span = text[start:end]
    literal = python_literal(span)  # {'a': True, 'b': None}: exact where json_repair guesses
    if isinstance(literal, dict):
        return ParsedArguments(value=literal, repaired=True)
    return _json_repair(text[start:], span)


def _close_cut_off(text: str) -> dict[str, Any] | None:
    """Close the string and brackets a cut-off object left open, and parse it; None when that
    is not enough (then slower, looser strategies get their turn)."""
    found = scan(text)
    if found.open_quote:
        if (len(text) - len(text.rstrip("\\"))) % 2:  # a dangling escape: drop it
            text = text[:-1]
        text += found.open_quote
    else:
        text = text.rstrip()
        if text.endswith(","):
            text = text[:-1]
    text += "".join(_OPENERS[ch] for ch in reversed(found.open_brackets))
    value = _loads_lenient(text)
    if value is None:  # {'a': 'cut off
        value = python_literal(text)
    return value if isinstance(value, dict) else None


def _json_repair(text: str, span: str) -> ParsedArguments:
    import json_repair

    if len(span) > MAX_REPAIR_CHARS:
        raise ArgumentsError(
            f"the arguments are not valid JSON and, at {len(span):,} characters, too large to "
            f"repair (the limit is {MAX_REPAIR_CHARS:,}); send them again as valid JSON: "
            f"{text[:120]!r}")
    try:
        value = json_repair.loads(span)
    except Exception as exc:  # json_repair raises assorted errors on hopeless input
        raise ArgumentsError(f"the arguments are not valid JSON and could not be repaired: "
                             f"{text[:120]!r}") from exc
    if isinstance(value, list):
        value = next((v for v in value if isinstance(v, dict)), None)
    if isinstance(value, str):
        return parse_arguments(value)
    if not isinstance(value, dict) or (not value and not _looks_empty_object(span)):
        raise ArgumentsError(f"the arguments are not valid JSON and could not be repaired: "
                             f"{text[:120]!r}")
    return ParsedArguments(value=value, repaired=True)


_DECODER = json.JSONDecoder(strict=False)
_DANGLING_KEY_REVERSED = re.compile(r"""\s*:\s*["']?([\w$-]+)""")  # matched on the reversed tail


def _loads_lenient(text: str) -> Any:
    try:
        return _DECODER.decode(text)
    except ValueError:
        return None


def balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket closing the one at `start`, skipping quoted strings (JSON or
    Python quotes); None when the text ends first (a cut-off object)."""
    depth = 0
    quote = ""
    i, n = start, len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
            if depth <= 0:
                return i + 1
        i += 1
    return None


def _cut_off_problem(text: str) -> str | None:
    """A precise error when an unclosed object ends right after a key: repairing it would invent
    an empty value the model never wrote."""
    tail = text.rstrip()
    if not tail.endswith(":"):
        return None
    # anchored at the start of the reversed tail, so the regex never rescans the whole text
    dangling = _DANGLING_KEY_REVERSED.match(tail[::-1])
    if dangling and not scan(text).open_quote:
        return (f"the arguments are cut off: key {dangling.group(1)[::-1]!r} has no value and "
                "the object is never closed")
    return None


def python_literal(text: str) -> Any:
    """The value of a Python literal (`{'a': True, 'b': None}`) as JSON-compatible data, or None.
    Uses `ast.literal_eval`: nothing is ever executed."""
    import ast

    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return to_jsonable(value)


def to_jsonable(value: Any) -> Any:
    """Python data (tuples, sets, bytes) as JSON-compatible data."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, complex):
        return str(value)
    return value


def _looks_empty_object(text: str) -> bool:
    """`{}` or `{ ` with nothing inside: an honest empty object, not garbage repaired to one."""
    return not text[1:].split("}", 1)[0].strip()


def _json_kind(value: Any) -> str:
    return {list: "an array", str: "a string", int: "a number", float: "a number",
            bool: "a boolean", type(None): "null"}.get(type(value), type(value).__name__)


# Arguments as history keeps them: always one JSON object. A model's raw arguments may be cut off
# by the output limit (`{"a":`) or broken beyond repair; they reach the executor as written (so
# the model gets a precise error), but some servers (llama.cpp) parse every call in the history
# and reject the whole request, on every later turn, when one call's arguments do not parse.

EMPTY = "{}"


# the same arguments are checked several times a turn (stored, sanitised, screened): short ones
# are remembered (a string's hash is computed once and kept by the string)
_MEMO_CHARS = 2048


def is_json_object(raw: str) -> bool:
    """True when `raw` is the text of one JSON object (the fast, common case)."""
    if len(raw) <= _MEMO_CHARS:
        return _short_is_json_object(raw)
    return _is_json_object(raw)


def _is_json_object(raw: str) -> bool:
    text = raw.strip()
    if not text.startswith("{"):
        return False
    try:
        value = loads_bounded(text)
        if isinstance(value, dict):
            _check_finite(value)  # `NaN` is Python's JSON, no other parser's
            return True
    except ValueError:
        pass
    return False


@functools.lru_cache(maxsize=4096)
def _short_is_json_object(raw: str) -> bool:
    return _is_json_object(raw)


def canonical_arguments(raw: str) -> str:
    """The arguments as one canonical JSON text (keys sorted, no spaces), so `{"a":1,"b":2}`
    and `{"b": 2, "a": 1}` are the same; text that does not parse, stripped. Remembered for
    short ones: each call's is asked for several times a turn (review checks, idempotency)."""
    if len(raw) <= _MEMO_CHARS:
        return _short_canonical_arguments(raw)
    return _canonical_arguments(raw)


def _canonical_arguments(raw: str) -> str:
    try:
        return json.dumps(loads_bounded(raw or EMPTY), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return raw.strip()


@functools.lru_cache(maxsize=1024)
def _short_canonical_arguments(raw: str) -> str:
    return _canonical_arguments(raw)


def storable_arguments(raw: str, *, cut: bool = False) -> str:
    """`raw` if it is a JSON object; else the object it repairs to (what the tool ran with);
    else `{}`. Arguments cut off by the output limit are stored as `{}`: the call never ran."""
    if is_json_object(raw):
        return raw
    if cut or not raw.strip():
        return EMPTY
    try:
        value = parse_arguments(raw).value
    except (ArgumentsError, RecursionError):
        return EMPTY
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return EMPTY
