"""Tool calls written as text, in the shapes local models really produce.

Used twice: in prompt mode (`tool_call_format="prompt"`, models without native tools) and as a
fallback in native mode, where local servers often return a call as text even though native
tools were sent. Families understood:

- Hermes / Qwen: `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (closing tag optional at
  the end, several blocks or several objects per block, `arguments` as a JSON string,
  `parameters` / `params` / `args` / `input` keys, `tool` instead of `name`, Python literals,
  trailing commas), and Qwen3-Coder's `<function=name><parameter=k>v</parameter></function>`;
- Llama 3.1 `<function=name>{…}</function>`;
- Mistral `[TOOL_CALLS] [{…}, …]`, `[TOOL_CALLS]name{…}` and `[TOOL_CALLS]name[ARGS]{…}`;
- pythonic `[get_weather(city='Paris', n=2)]` (Llama 3.2 / 4), read with `ast`, never `eval`;
- Llama 3 bare JSON `{"name": …, "parameters": {…}}`, several separated by `;` or newlines,
  optionally fenced; this fallback runs only on the text left once markup regions are removed, so
  no call is found twice, and it only accepts names of known tools: text that mentions JSON is
  not a call.

Arguments are returned as text, exactly as written when they are not valid JSON, so that the
executor repairs and validates them like native arguments (`tools.arguments`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from loopwright.tools.arguments import balanced_end, python_literal, to_jsonable

NAME_KEYS = ("name", "tool", "tool_name", "function", "function_name")
ARGUMENT_KEYS = ("arguments", "parameters", "params", "args", "input", "tool_input", "kwargs")
_META_KEYS = frozenset({"type", "id", "call_id", "index"})
_SPECIAL_TOKENS = re.compile(r"<\|(?:python_tag|python_start|python_end|eom_id|eot_id)\|>")
_TAG_OPEN = re.compile(r"<tool_call>|<\|tool_call\|>|<function=([A-Za-z_][\w.\-]*)>")
_CALL_OPEN = re.compile(r"<tool_call>|<\|tool_call\|>")
_TAG_CLOSE = {"<tool_call>": ("</tool_call>", "<|/tool_call|>"),
              "<|tool_call|>": ("<|/tool_call|>", "</tool_call>")}
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_NAMED = re.compile(
    r"\s*([A-Za-z_][\w.\-]*)\s*(?:\[CALL_ID\]\s*[\w\-]+\s*)?(?:\[ARGS\])?\s*(?=\{)")
_FENCE = re.compile(
    r"```[ \t]*(?:json|JSON|tool_call|tool_code|javascript)?[ \t]*\n(.*?)\n?[ \t]*```", re.S)
_PYTHONIC = re.compile(r"\[\s*([A-Za-z_][\w.]*)\s*\(")
_LOOSE_NAME = re.compile(
    r"""["']?(?:name|tool|tool_name|function)["']?\s*[:=]\s*["']([A-Za-z_][\w.\-]*)["']""")
_LOOSE_ARGS = re.compile(
    r"""["']?(?:arguments|parameters|params|args|input)["']?\s*[:=]\s*""")
_XML_PARAM = re.compile(r"<parameter=([\w.\-]+)>\n?(.*?)\n?</parameter>", re.S)
_BLANK_RUNS = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")

FORMAT_HINT = '<tool_call>\n{"name": "<tool name>", "arguments": {<arguments>}}\n</tool_call>'


@dataclass(frozen=True, kw_only=True, slots=True)
class TextToolCall:
    """One call found in text. `arguments` is JSON text, or the raw text as written."""

    name: str
    arguments: str
    style: str  # "hermes", "function_tag", "mistral", "pythonic" or "json"


@dataclass(frozen=True, kw_only=True, slots=True)
class MalformedCall:
    """A block of call markup that could not be read as a call."""

    text: str
    problem: str


@dataclass(kw_only=True, slots=True)
class TextCalls:
    """What `parse_tool_calls` found: calls in order of discovery, unreadable blocks, and the
    visible text with all call markup removed."""

    calls: list[TextToolCall] = field(default_factory=list)
    malformed: list[MalformedCall] = field(default_factory=list)
    text: str = ""


class _Names:
    """Which names are acceptable: `known` is None for "any"; `trust_markup` lets explicit
    markup name unknown tools (prompt mode: the executor then answers with the real names)."""

    def __init__(self, known: Collection[str] | None, trust_markup: bool) -> None:
        self.known = None if known is None else frozenset(known)
        self.trust_markup = trust_markup or known is None

    def in_markup(self, names: list[str]) -> bool:
        return self.trust_markup or all(self.is_known(n) for n in names)

    def accepts(self, calls: list[TextToolCall], problem: str | None) -> bool:
        """Is a markup block taken out of the text: its calls, or its problem to report?"""
        if calls:
            return self.in_markup([c.name for c in calls])
        return problem is not None and self.trust_markup

    def is_known(self, name: str) -> bool:
        return self.known is None or name in self.known


def parse_tool_calls(text: str, known_names: Collection[str] | None = None, *,
                     trust_markup: bool = True) -> TextCalls:
    """Find the tool calls written in `text`.

    `known_names`: the callable tools (None accepts any name). Bare JSON and pythonic calls
    always need a known name. With `trust_markup=False` (native-mode fallback) explicit markup
    must name known tools too, and unreadable markup is left as text instead of being reported.
    """
    names = _Names(known_names, trust_markup)
    found = TextCalls()
    rest = _SPECIAL_TOKENS.sub("\n", text) if "<|" in text else text
    if "<" in rest:
        rest = _extract_tags(rest, names, found)
    if _MISTRAL in rest:
        rest = _extract_mistral(rest, names, found)
    if names.known is not None and "(" in rest:
        rest = _extract_pythonic(rest, names, found)
    if "{" in rest:
        rest = _extract_json(rest, names, found)
    found.text = _tidy(rest) if found.calls or found.malformed else text
    return found


# --- <tool_call> and <function=…> markup ------------------------------------------------------


def _extract_tags(text: str, names: _Names, found: TextCalls) -> str:
    kept: list[str] = []
    pos = 0
    while True:
        match = _TAG_OPEN.search(text, pos)
        if match is None:
            break
        body_start = match.end()
        closes: tuple[str, ...]
        if match.group(1):
            closes, openers = ("</function>",), _TAG_OPEN
        else:
            closes, openers = _TAG_CLOSE[match.group(0)], _CALL_OPEN
        body_end, block_end, closed = _block_bounds(text, body_start, closes, openers)
        body = text[body_start:body_end]
        starts = ("{", "<parameter=") if match.group(1) else ("{", "[", "`", "<function=")
        calls: list[TextToolCall]
        problem: str | None
        if not closed and not body.lstrip().startswith(starts):
            calls, problem = [], None  # the tag merely mentioned in prose
        elif match.group(1):
            calls, problem = _function_tag_call(match.group(1), body)
        else:
            calls, problem = _calls_in_block(body)
        if names.accepts(calls, problem):
            kept.append(text[pos:match.start()])
            kept.append("\n")
            found.calls.extend(calls)
            if problem:
                found.malformed.append(MalformedCall(text=text[match.start():block_end],
                                                     problem=problem))
            pos = block_end
        else:
            kept.append(text[pos:body_start])
            pos = body_start
    kept.append(text[pos:])
    remaining = "".join(kept)
    for stray in ("</tool_call>", "<|/tool_call|>"):
        remaining = remaining.replace(stray, "")
    return remaining


def _block_bounds(text: str, start: int, closes: tuple[str, ...], openers: re.Pattern[str]
                  ) -> tuple[int, int, bool]:
    """(end of body, end of block, closed?) — a block ends at its closing tag, at the next opening
    tag (models often omit closings between calls), or at the end of the text."""
    ends = [(text.find(c, start), len(c)) for c in closes]
    ends = [(i, n) for i, n in ends if i >= 0]
    next_open = openers.search(text, start)
    candidates = ends + ([(next_open.start(), 0)] if next_open else [])
    if not candidates:
        return len(text), len(text), False
    index, length = min(candidates)
    return index, index + length, length > 0


def _calls_in_block(body: str) -> tuple[list[TextToolCall], str | None]:
    body = _strip_fence(body.strip())
    if not body:
        return [], "the <tool_call> block is empty"
    if body.startswith("<function="):
        inner = re.match(r"<function=([A-Za-z_][\w.\-]*)>(.*?)(?:</function>|$)", body, re.S)
        if inner:
            return _function_tag_call(inner.group(1), inner.group(2))
    objects, problem = _objects_in(body, allow_loose=True)
    calls: list[TextToolCall] = []
    for obj in objects:
        call = _call_from_object(obj, style="hermes", allow_flat=True)
        if call is None:
            return [], (f"no tool name in {_preview(json.dumps(obj, ensure_ascii=False))}: each "
                        'call needs "name" and "arguments"')
        calls.append(call)
    if not calls:
        return [], problem or f"no JSON object in the block: {_preview(body)}"
    return calls, None


def _function_tag_call(name: str, body: str) -> tuple[list[TextToolCall], str | None]:
    """`<function=name>{json}</function>` or Qwen3-Coder `<parameter=k>v</parameter>` pairs."""
    if "<parameter=" in body:
        params: dict[str, Any] = {}
        for key, raw in _XML_PARAM.findall(body):
            value: Any = raw
            if raw.strip().startswith(("{", "[")):  # scalars stay text; validation coerces them
                try:
                    value = json.loads(raw)
                except ValueError:
                    value = raw
            params[key] = value
        arguments = json.dumps(params, ensure_ascii=False)
    else:
        arguments = body.strip() or "{}"
    return [TextToolCall(name=name, arguments=arguments, style="function_tag")], None


# --- Mistral [TOOL_CALLS] ----------------------------------------------------------------------


def _extract_mistral(text: str, names: _Names, found: TextCalls) -> str:
    head, *segments = text.split(_MISTRAL)
    kept = [head]
    for segment in segments:
        calls, rest = _mistral_segment(segment)
        if calls and names.in_markup([c.name for c in calls]):
            found.calls.extend(calls)
            kept.append("\n" + rest)
        else:
            kept.append(_MISTRAL + segment)
    return "".join(kept)


def _mistral_segment(segment: str) -> tuple[list[TextToolCall], str]:
    stripped = segment.lstrip()
    if stripped.startswith(("[", "{")):
        value, end = _decode_at(stripped, 0)
        values = value if isinstance(value, list) else [value]
        calls = [_call_from_object(v, style="mistral", allow_flat=False) for v in values]
        if value is not None and calls and all(calls):
            return [c for c in calls if c], stripped[end:]
        return [], segment
    named = _MISTRAL_NAMED.match(segment)
    if named is None:
        return [], segment
    start = named.end()
    end = balanced_end(segment, start) or len(segment)
    call = TextToolCall(name=named.group(1), arguments=segment[start:end], style="mistral")
    return [call], segment[end:]


# --- pythonic [f(a=1), g(b='x')] ---------------------------------------------------------------


def _extract_pythonic(text: str, names: _Names, found: TextCalls) -> str:
    kept: list[str] = []
    pos = 0
    for match in _PYTHONIC.finditer(text):
        if match.start() < pos or not names.is_known(match.group(1)):
            continue
        end = balanced_end(text, match.start())
        calls = _pythonic_calls(text[match.start():end]) if end else None
        if calls and all(names.is_known(c.name) for c in calls):
            kept.append(text[pos:match.start()] + "\n")
            found.calls.extend(calls)
            pos = end or len(text)
    stripped = text[pos:].strip()
    whole = re.match(r"([A-Za-z_][\w.]*)\s*\(", stripped)
    if whole and names.is_known(whole.group(1)) and balanced_end(stripped, whole.end() - 1) == len(
            stripped):
        calls = _pythonic_calls(f"[{stripped}]")
        if calls:
            found.calls.extend(calls)
            kept.append("\n")
            pos = len(text)
    kept.append(text[pos:])
    return "".join(kept)


def _pythonic_calls(source: str) -> list[TextToolCall] | None:
    """Calls from a Python list of calls with literal keyword arguments; None if it is anything
    else (positional arguments, variables, expressions): then it is code, not a call."""
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None
    calls: list[TextToolCall] = []
    for node in tree.body.elts:
        if not isinstance(node, ast.Call) or node.args:
            return None
        name = _dotted_name(node.func)
        if name is None or any(kw.arg is None for kw in node.keywords):
            return None
        try:
            arguments = {str(kw.arg): ast.literal_eval(kw.value) for kw in node.keywords}
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        text = json.dumps(to_jsonable(arguments), ensure_ascii=False, default=str)
        calls.append(TextToolCall(name=name, arguments=text, style="pythonic"))
    return calls


def _dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


# --- bare or fenced JSON (Llama 3 style) ---------------------------------------------------------


def _extract_json(text: str, names: _Names, found: TextCalls) -> str:
    text = _FENCE.sub(lambda m: _fenced_calls(m, names, found), text)
    kept: list[str] = []
    pos = scan = 0
    while True:
        start = _next_object(text, scan)
        if start < 0:
            break
        end = balanced_end(text, start)
        span = text[start:end]
        if not _names_known_tool(span, names):  # cheap test first: most braces are not calls
            if end is None:
                break
            scan = end
            continue
        if end is None:
            calls = _loose_calls(span, names)
            end = len(text)
        else:
            value, decoded_end = _decode_at(text, start)
            calls = _json_calls(value, names) if value is not None else None
            end = max(end, decoded_end)
        if calls:
            kept.append(text[pos:start] + "\n")
            found.calls.extend(calls)
            pos = _skip_separator(text, end)
        scan = end  # a JSON value that is not a call is skipped whole: nothing nested is read
    kept.append(text[pos:])
    return "".join(kept)


def _names_known_tool(span: str, names: _Names) -> bool:
    return any(names.is_known(m.group(1)) for m in _LOOSE_NAME.finditer(span))


def _fenced_calls(match: re.Match[str], names: _Names, found: TextCalls) -> str:
    inner = match.group(1).strip()
    objects, problem = _objects_in(inner, allow_loose=False)
    if problem or not objects:
        return match.group(0)
    calls = _json_calls(objects, names)
    if not calls:
        return match.group(0)
    found.calls.extend(calls)
    return "\n"


_CALL_LISTS = ("tool_calls", "calls", "function_calls", "tools")


def _json_calls(value: Any, names: _Names) -> list[TextToolCall] | None:
    if isinstance(value, dict):  # {"tool_calls": [{…}, …]}
        wrapped = next((value[k] for k in _CALL_LISTS if isinstance(value.get(k), list)), None)
        if wrapped is not None and len(value) == 1:
            value = wrapped
    values = value if isinstance(value, list) else [value]
    calls = [_call_from_object(v, style="json", allow_flat=False) for v in values]
    if not calls or not all(c is not None and names.is_known(c.name) for c in calls):
        return None
    return [c for c in calls if c is not None]


def _loose_calls(text: str, names: _Names) -> list[TextToolCall] | None:
    """A cut-off call object at the end of the text: the name and the raw argument text.
    The name must come early: a stray `{` far before a call is not the start of one."""
    if not any(names.is_known(m.group(1)) for m in _LOOSE_NAME.finditer(text, 0, 200)):
        return None
    call = _loose_call(text, style="json")
    if call is None or not names.is_known(call.name) or call.arguments == "{}":
        return None
    return [call]


def _next_object(text: str, start: int) -> int:
    brace = text.find("{", start)
    bracket = text.find("[", start)
    while bracket >= 0 and not text[bracket + 1:bracket + 40].lstrip().startswith("{"):
        bracket = text.find("[", bracket + 1)  # only lists of objects can be lists of calls
    options = [i for i in (brace, bracket) if i >= 0]
    return min(options) if options else -1


def _skip_separator(text: str, end: int) -> int:
    match = re.compile(r"[ \t]*[;,]?").match(text, end)
    return match.end() if match else end


# --- shared: objects and calls ------------------------------------------------------------------

_DECODER = json.JSONDecoder(strict=False)


def _decode_at(text: str, start: int) -> tuple[Any, int]:
    """(value, end) of the JSON (or Python-literal, or repairable) value at `start`; (None, start)
    if there is none. Only closed values are decoded here; cut-off ones are the caller's call."""
    try:
        return _DECODER.raw_decode(text, start)
    except ValueError:
        pass
    end = balanced_end(text, start)
    if end is None:
        return None, start
    span = text[start:end]
    value = python_literal(span)
    if isinstance(value, dict | list):
        return value, end
    value = _repair_json(span)
    return (value, end) if isinstance(value, dict | list) else (None, start)


def _repair_json(span: str) -> Any:
    import json_repair

    try:
        return json_repair.loads(span)
    except Exception:  # json_repair raises assorted errors on hopeless input
        return None


def _objects_in(body: str, *, allow_loose: bool) -> tuple[list[Any], str | None]:
    """Every JSON value in a block, back to back (separated by space, `,` or `;`), lists flattened.
    A cut-off object at the end yields a loose object (name plus raw argument text)."""
    out: list[Any] = []
    pos = 0
    while True:
        while pos < len(body) and (body[pos].isspace() or body[pos] in ",;"):
            pos += 1
        if pos >= len(body) or body[pos] not in "{[":
            break
        value, end = _decode_at(body, pos)
        if value is None:
            loose = _loose_call(body[pos:], style="hermes") if allow_loose else None
            if loose is None:
                return out, f"the call is not valid JSON: {_preview(body[pos:])}"
            out.append({"name": loose.name, "arguments": loose.arguments})
            break
        out.extend(value if isinstance(value, list) else [value])
        pos = end
    if not out and body and body[0] not in "{[":
        return out, f"expected a JSON object, got: {_preview(body)}"
    return out, None


def _call_from_object(obj: Any, *, style: str, allow_flat: bool) -> TextToolCall | None:
    """A call from `{"name": …, "arguments": …}` and its variants; None if it is not one."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI shape {"type": "function", "function": {…}}
        obj = obj["function"]
    name_key = next((k for k in NAME_KEYS if isinstance(obj.get(k), str) and obj[k]), None)
    if name_key is None:
        return None
    arg_key = next((k for k in ARGUMENT_KEYS if k in obj), None)
    if arg_key is not None:
        value = obj[arg_key]
    else:
        value = {k: v for k, v in obj.items() if k != name_key and k not in _META_KEYS}
        if value and not allow_flat:
            return None  # {"name": "Alice", "age": 3} is data, not a call
    if isinstance(value, str):
        arguments = value if value.strip() else "{}"
    else:
        arguments = json.dumps({} if value is None else value, ensure_ascii=False)
    return TextToolCall(name=obj[name_key].strip(), arguments=arguments, style=style)


def _loose_call(text: str, *, style: str) -> TextToolCall | None:
    """Name and raw argument text from an object too broken (or cut off) to decode."""
    name = _LOOSE_NAME.search(text)
    if name is None:
        return None
    args = _LOOSE_ARGS.search(text)
    if args is None:
        return TextToolCall(name=name.group(1), arguments="{}", style=style)
    start = args.end()
    if text.startswith('"', start):
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, str):
            return TextToolCall(name=name.group(1), arguments=value, style=style)
    end = balanced_end(text, start) if text.startswith(("{", "["), start) else None
    raw = text[start:end] if end else _trim_outer_close(text[start:])
    return TextToolCall(name=name.group(1), arguments=raw.strip() or "{}", style=style)


def _trim_outer_close(raw: str) -> str:
    """`{"a": 1}}` → `{"a": 1}`: drop closers that belong to the enclosing call object."""
    raw = raw.rstrip()
    while raw.endswith("}") and raw.count("}") > raw.count("{"):
        raw = raw[:-1].rstrip()
    return raw


def _strip_fence(body: str) -> str:
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else body[3:]
        body = body.rstrip()
        if body.endswith("```"):
            body = body[:-3]
    return body.strip()


def _preview(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _tidy(text: str) -> str:
    return _BLANK_RUNS.sub("\n\n", text).strip()
