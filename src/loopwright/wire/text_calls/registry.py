"""The families in the order they are tried, and what the streaming holdback needs to know about
them: where a call may start and whether some text could still become one."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from loopwright.arguments import is_complete_json, small_json_object
from loopwright.wire.text_calls import harmony, special_tokens
from loopwright.wire.text_calls.bare_json import extract_json
from loopwright.wire.text_calls.mistral import MARKER as MISTRAL_MARKER
from loopwright.wire.text_calls.mistral import extract_mistral
from loopwright.wire.text_calls.model import Names, TextCalls, TextToolCall
from loopwright.wire.text_calls.objects import CALL_KEYS, tidy
from loopwright.wire.text_calls.pythonic import extract_pythonic
from loopwright.wire.text_calls.tags import extract_tags

_SPECIAL_TOKENS = re.compile(r"<\|(?:python_tag|python_start|python_end|eom_id|eot_id)\|>")

Stage = Callable[[str, Names, TextCalls], str]
# (needed in the text, stage): explicit markup first, so bare JSON only sees what is left
_STAGES: tuple[tuple[str, Stage], ...] = (
    ("<|message|>", harmony.extract_harmony),
    ("<｜tool▁call", special_tokens.extract_deepseek),
    ("<|tool_call", special_tokens.extract_kimi),
    ("<", extract_tags),
    (MISTRAL_MARKER, extract_mistral),
)


def parse_tool_calls(text: str, known_names: Collection[str] | None = None, *,
                     trust_markup: bool = True) -> TextCalls:
    """Find the tool calls written in `text`.

    `known_names`: the callable tools (None accepts any name). Explicit markup may name any
    tool (the executor then answers with the real names); bare JSON needs a known name unless it
    stands on its own with exactly a call's shape; pythonic calls always need a known name. With
    `trust_markup=False` (native-mode fallback) unreadable markup is left as text instead of being
    reported to the model.
    """
    names = Names(known_names, trust_markup)
    found = TextCalls()
    rest = text
    for needle, stage in _STAGES:
        if needle in rest:
            rest = stage(rest, names, found)
    if "<|" in rest:
        rest = _SPECIAL_TOKENS.sub("\n", rest)
    if names.known is not None and "(" in rest:
        rest = extract_pythonic(rest, names, found)
    if "{" in rest:
        rest = extract_json(rest, names, found)
    rest, cut_tail = _without_cut_call_tail(rest, text)
    rest = _without_argument_copies(rest, found.calls)
    changed = (found.calls or found.malformed or found.reasoning or cut_tail
               or "<|message|>" in text)
    found.text = tidy(rest) if changed else text
    return found


def _without_cut_call_tail(rest: str, reply: str) -> tuple[str, bool]:
    """A reply that stops inside the head of a call (`{"name`, `<tool_call>\n{"na`) ends in a
    fragment too short to name its tool: it is no text for the user or for the history. `rest`
    is what the families left of `reply`; the fragment must end both."""
    stripped = rest.rstrip()
    line_start = stripped.rfind("\n") + 1
    tail = stripped[line_start:].lstrip()
    if (tail[:1] not in ("{", "[", "<") or not reply.rstrip().endswith(tail)
            or not is_call_fragment(tail)):
        return rest, False
    return stripped[:line_start], True


def _without_argument_copies(rest: str, calls: list[TextToolCall]) -> str:
    """Nothing, when all the text beside the calls is one of their arguments objects again —
    call JSON, not text (the 0.5B wrote `{"path": "notes.txt"}` above its `<tool_call>` block;
    kept in the history, that object was its answer three times once the file was read)."""
    value = small_json_object(rest) if calls else None
    if value is None:
        return rest
    return "" if value in [small_json_object(c.arguments) for c in calls] else rest


def is_call_fragment(text: str) -> bool:
    """Whether `text` is the unfinished start of a call (markup or call JSON), not prose and
    not complete: what a reply cut mid-call leaves behind."""
    text = text.strip()
    if not text or not could_be_call_prefix(text):
        return False
    for marker, close in MARKERS.items():
        if text.startswith(marker):  # markup is cut only if its region never closed
            return close is not None and close not in text
    # a fence or a word: whether it was cut cannot be told
    return text[0] in "{[" and not is_complete_json(text)


# --- for streaming: where calls start and how they end -----------------------------------------

# markers that open a region, and what closes it (None: the region runs to the end of the reply)
MARKERS: dict[str, str | None] = {
    "<tool_call>": "</tool_call>",
    "<|tool_call|>": None,
    "<tool_response>": "</tool_response>",
    "<system-reminder>": "</system-reminder>",  # the runtime's own markup, imitated
    "<function=": "</function>",
    MISTRAL_MARKER: None,
    "<|python_tag|>": None,
    "<|python_start|>": None,
    special_tokens.DS_OPEN: special_tokens.DS_CLOSE,
    special_tokens.DS_CALL_OPEN: special_tokens.DS_CALL_CLOSE,
    special_tokens.KIMI_OPEN: special_tokens.KIMI_CLOSE,
    special_tokens.KIMI_CALL_OPEN: special_tokens.KIMI_CALL_CLOSE,
    **{m: None for m in harmony.MARKERS},
}
LONGEST_MARKER = max(len(m) for m in MARKERS)
# for `could_be_call_prefix` at C speed: text that starts with a marker, or is the start of one
_MARKER_HEADS = tuple(MARKERS)
_MARKER_PREFIXES = frozenset(m[:n] for m in MARKERS for n in range(1, len(m) + 1))
_FENCE_HEAD = re.compile(r"```[ \t]*([A-Za-z_]*)[ \t]*(\n|$)")
_FENCE_LANGS = frozenset({"", "json", "JSON", "tool_call", "tool_code", "javascript"})
_KEY_START = re.compile(r"""\{\s*(?:["']([\w]*)(["']?)|([A-Za-z_]\w*))?""", re.S)
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*")


def could_be_call_prefix(text: str, known: Collection[str] | None = None) -> bool:
    """Could `text`, which starts where a call might start, still turn out to be call markup or
    call JSON once more text arrives (or already be one)? False means it is surely ordinary text,
    so a stream may show it now."""
    if not text or text.startswith(_MARKER_HEADS) or text in _MARKER_PREFIXES:
        return True
    first = text[0]
    if first == "{":
        return _object_could_be_call(text)
    if first == "[":
        rest = text[1:].lstrip()
        if not rest:
            return True
        if rest[0] == "{":
            return _object_could_be_call(rest)
        return _could_be_pythonic(rest, known)
    if text.startswith("`"):
        return _fence_could_be_call(text, known)
    return _could_be_pythonic(text, known)


def _object_could_be_call(text: str) -> bool:
    match = _KEY_START.match(text)
    if match is None:
        return False
    if match.end() == len(text):  # the first key is still arriving
        key = match.group(1) if match.group(1) is not None else match.group(3) or ""
        return any(k.startswith(key) for k in CALL_KEYS)
    key = match.group(1) if match.group(1) is not None else match.group(3)
    return key is not None and key in CALL_KEYS


def _fence_could_be_call(text: str, known: Collection[str] | None) -> bool:
    if "```".startswith(text):
        return True
    if not text.startswith("```"):
        return False
    head = _FENCE_HEAD.match(text)
    if head is None:
        return False
    if not head.group(2):  # the language is still arriving
        lang = head.group(1)
        return any(s.startswith(lang) for s in _FENCE_LANGS)
    if head.group(1) not in _FENCE_LANGS:
        return False
    body = text[head.end():].lstrip()
    return not body or could_be_call_prefix(body, known)


def _could_be_pythonic(text: str, known: Collection[str] | None) -> bool:
    if known is None:
        return False
    word = _IDENTIFIER.match(text)
    if word is None:
        return False
    name = word.group(0)
    if word.end() == len(text):
        return any(k.startswith(name) for k in known)
    return name in known and text[word.end():].lstrip()[:1] in ("(", "")
