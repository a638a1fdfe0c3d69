"""The value of one shell word, as bash would see it after quote removal and expansion.

A word may hold parts whose value is not known before the command runs (`$X` of an unknown
variable, `$(curl …)`); such a word is `computed`. Parts whose value is known here (a variable set
earlier in the same command line, `~`, `$HOME`, `$(printf rm)`) are filled in, and a word may have
a few `candidates` (`${X:-/}` is "" or "/", `for d in a b` binds `d` to "a" and "b"), so that the
policy can check every value the word could take.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import product

MAX_CANDIDATES = 16
_GLOB_CHARS = frozenset("*?[")
_BRACE_LIST = re.compile(r"\{([^{}\s]*,[^{}\s]*)\}")
_C_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
              "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_OCTAL = re.compile(r"[0-7]{1,3}")
_HEX = re.compile(r"[0-9a-fA-F]{1,2}")
_UNICODE = re.compile(r"[0-9a-fA-F]{1,8}")


@dataclass(frozen=True)
class Word:
    """One word: its value (unknown parts keep their source text), the values it may take, and
    how it was built."""

    value: str
    candidates: tuple[str, ...]
    stripped: tuple[str, ...] = ()  # the candidates with every unknown part empty
    computed: bool = False  # some part is unknown until run time
    expanded: bool = False  # some part came from an expansion, even a known one
    glob: bool = False  # unquoted *, ? or [ (pathname expansion)
    ifs_trick: bool = False  # an unquoted $IFS, used to split one word into several
    process_substitution: bool = False  # <(…) or >(…)
    unquoted_expansion: bool = False  # an expansion outside quotes: its value is split on spaces

    @classmethod
    def literal(cls, text: str) -> Word:
        return cls(value=text, candidates=(text,), stripped=(text,))


@dataclass
class Piece:
    """A word under construction: the cross product of its parts' possible values."""

    values: list[str] = field(default_factory=lambda: [""])
    stripped: list[str] = field(default_factory=lambda: [""])  # unknown parts left out
    source: list[str] = field(default_factory=list)
    computed: bool = False
    expanded: bool = False
    glob: bool = False
    ifs_trick: bool = False
    process_substitution: bool = False
    unquoted_expansion: bool = False

    def add(self, options: tuple[str, ...] | list[str], source: str,
            stripped: tuple[str, ...] | list[str] | None = None) -> None:
        combined = [a + b for a, b in product(self.values, options)]
        reduced = [a + b for a, b in product(self.stripped,
                                             options if stripped is None else stripped)]
        if len(combined) > MAX_CANDIDATES or len(reduced) > MAX_CANDIDATES:
            self.computed = True
        self.values = combined[:MAX_CANDIDATES]
        self.stripped = reduced[:MAX_CANDIDATES]
        self.source.append(source)

    def add_unknown(self, source: str) -> None:
        """A part whose value is not known: the word keeps its source text there (and nothing
        in its `stripped` values)."""
        self.computed = self.expanded = True
        self.add((source,), source, ("",))

    def build(self) -> Word:
        values = tuple(dict.fromkeys(self.values))
        stripped = tuple(dict.fromkeys(self.stripped)) if self.computed else values
        return Word(value=values[0], candidates=values, stripped=stripped,
                    computed=self.computed,
                    expanded=self.expanded, glob=self.glob, ifs_trick=self.ifs_trick,
                    process_substitution=self.process_substitution,
                    unquoted_expansion=self.unquoted_expansion)


def unquoted_word(text: str, home: str) -> tuple[list[str], bool]:
    """An unquoted word's possible values (backslashes removed, `~` and brace lists expanded)
    and whether it has glob characters outside backslash escapes."""
    out: list[str] = []
    glob = False
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":  # a backslash-newline joins lines
                out.append("\x00" + text[index + 1])  # marked: never a glob or brace char
            index += 2
            continue
        glob |= char in _GLOB_CHARS
        out.append(char)
        index += 1
    marked = "".join(out)
    if marked == "~" or marked.startswith("~/"):
        marked = home + marked[1:]
    values = _expand_braces(marked)
    return [value.replace("\x00", "") for value in values], glob


def _expand_braces(text: str) -> list[str]:
    values = [text]
    for _ in range(4):  # nested lists, a few levels deep
        expanded: list[str] = []
        changed = False
        for value in values:
            match = _BRACE_LIST.search(value)
            if match is None:
                expanded.append(value)
                continue
            changed = True
            head, tail = value[:match.start()], value[match.end():]
            expanded.extend(head + option + tail for option in match.group(1).split(","))
        values = expanded[:MAX_CANDIDATES]
        if not changed:
            break
    return values


def double_quoted_text(text: str) -> str:
    """Literal text inside double quotes: only \\$ \\` \\" \\\\ and backslash-newline escape."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in '$`"\\\n':
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def c_escapes(text: str) -> str:
    """Decode backslash escapes as `$'…'` and `printf` do (\\x72, \\162, \\u00e9, \\n, …)."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        kind = text[index + 1]
        index += 2
        if kind in _C_ESCAPES:
            out.append(_C_ESCAPES[kind])
        elif kind in "xuU":
            pattern = _HEX if kind == "x" else _UNICODE
            match = pattern.match(text, index, index + (2 if kind == "x" else
                                                        4 if kind == "u" else 8))
            if match is None:
                out.append("\\" + kind)
                continue
            out.append(chr(min(int(match.group(), 16), 0x10FFFF)))
            index = match.end()
        elif kind in "01234567":
            match = _OCTAL.match(text, index - 1)
            assert match is not None
            out.append(chr(int(match.group(), 8) & 0xFF))
            index = match.end()
        elif kind == "c" and index < len(text):
            out.append(chr(ord(text[index]) & 0x1F))
            index += 1
        else:
            out.append("\\" + kind)
    return "".join(out)


def printf_output(arguments: list[str]) -> str | None:
    """What `printf FORMAT [ARGS]` prints, for formats using only `%s`, `%b` and `%%`; None if
    the format is beyond this small evaluator."""
    if not arguments:
        return None
    fmt, *rest = arguments
    pieces = re.split(r"(%[%sb])", fmt)
    if any(re.search(r"%", piece) for piece in pieces if piece not in ("%%", "%s", "%b")):
        return None
    out: list[str] = []
    values = iter(rest)
    for piece in pieces:
        if piece == "%%":
            out.append("%")
        elif piece in ("%s", "%b"):
            value = next(values, "")
            out.append(c_escapes(value) if piece == "%b" else value)
        else:
            out.append(c_escapes(piece))
    return "".join(out)


def echo_output(arguments: list[str]) -> str:
    """What `echo [-n] [-e] ARGS` prints (without the trailing newline)."""
    interpret = False
    while arguments and re.fullmatch(r"-[neE]+", arguments[0]):
        interpret = "e" in arguments[0] or interpret
        arguments = arguments[1:]
    text = " ".join(arguments)
    return c_escapes(text) if interpret else text
