"""A tool function's docstring as the model reads it: the text before any section is the tool's
description, and each parameter's description comes from whichever style wrote it — Google
(`Args:`), NumPy (`Parameters` underlined with dashes) or Sphinx (`:param x:`), mixed freely in
one docstring. Each section runs until the next one starts, so no section's text becomes
another parameter's description; a header is only a header at the docstring's left margin,
alone on its line, followed by what such a section holds (prose that says "Args:" is prose)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# Google-style section titles (the napoleon extension's list): their text is never a parameter's
_GOOGLE_SECTIONS = frozenset({
    "args", "arguments", "attention", "attributes", "caution", "danger", "error", "example",
    "examples", "hint", "important", "keyword args", "keyword arguments", "kwargs", "methods",
    "note", "notes", "other parameters", "parameters", "params", "references", "return",
    "returns", "raise", "raises", "see also", "tip", "todo", "warning", "warnings", "warns",
    "yield", "yields"})
_PARAMETER_SECTIONS = frozenset({
    "args", "arguments", "keyword args", "keyword arguments", "kwargs", "other parameters",
    "parameters", "params"})
_GOOGLE_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
# `name: text`, `name (type): text`; a type may hold parentheses of its own: `(tuple(int, int))`
_GOOGLE_PARAM = re.compile(r"^(\*{0,2}\w+)\s*(?:\((?:[^()]|\([^()]*\))*\))?\s*:(?:\s+(.*)|$)")
_NUMPY_TITLE = re.compile(r"^[A-Za-z][A-Za-z ]*$")
_NUMPY_UNDERLINE = re.compile(r"^-{3,}$")
_NUMPY_PARAM = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?$")
# `:param x: …`, `:param int x: …`, `:returns: …`, `:raises ValueError: …`
_SPHINX_FIELD = re.compile(r"^:(\w+)((?:\s+[^:\s][^:]*)?):(?:\s+(.*)|$)")
_SPHINX_PARAMETERS = frozenset({"param", "parameter", "arg", "argument", "key", "keyword"})

Style = Literal["text", "google", "numpy", "sphinx"]


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {param: description}) from a docstring in Google, NumPy or Sphinx style,
    or a mix of them."""
    reader = _Reader()
    lines = doc.splitlines()
    underline = -1  # a NumPy title's underline: part of the title
    for index, line in enumerate(lines):
        if index == underline:
            continue
        stripped = line.strip()
        if stripped and not line[0].isspace():
            if _is_numpy_header(lines, index):
                reader.start("numpy", stripped)
                underline = index + 1
                continue
            if _is_google_header(lines, index):
                reader.start("google", stripped[:-1].strip())
                continue
            sphinx = _SPHINX_FIELD.match(stripped)
            if sphinx:
                reader.sphinx_field(sphinx.group(1), sphinx.group(2), sphinx.group(3) or "")
                continue
        reader.add(line, stripped)
    return "\n".join(reader.description).strip(), reader.params


@dataclass
class _Reader:
    """Where each line of a docstring goes: the description, a parameter's text, or nowhere
    (the text of a section about something else: returns, raises, examples)."""

    description: list[str] = field(default_factory=list)
    params: dict[str, str] = field(default_factory=dict)
    style: Style = "text"
    of_parameters: bool = False  # the section describes parameters
    indent: int | None = None  # where a Google section's parameter lines start
    current: tuple[str, ...] = ()  # the parameters the next indented lines describe

    def start(self, style: Style, title: str) -> None:
        self.style, self.indent, self.current = style, None, ()
        self.of_parameters = title.lower().rstrip(":") in _PARAMETER_SECTIONS

    def sphinx_field(self, kind: str, argument: str, text: str) -> None:
        self.start("sphinx", "")
        words = argument.split()
        if kind in _SPHINX_PARAMETERS and words:
            self.describe((words[-1],), text)

    def describe(self, names: tuple[str, ...], text: str) -> None:
        self.current = tuple(name.strip().lstrip("*") for name in names)
        for name in self.current:
            self.params[name] = text.strip()

    def add(self, line: str, stripped: str) -> None:
        if self.style == "text":
            self.description.append(line)
            return
        if not stripped:
            return
        indent = len(line) - len(line.lstrip())
        if self.style == "numpy":
            self._numpy_line(indent, stripped)
        elif self.style == "google":
            self._google_line(line, indent, stripped)
        elif indent:  # a Sphinx field's text goes on, indented
            self.continue_current(stripped)
        else:  # unindented prose after the fields
            self.start("text", "")
            self.description.append(line)

    def continue_current(self, stripped: str) -> None:
        for name in self.current:
            self.params[name] = f"{self.params[name]} {stripped}".strip()

    def _numpy_line(self, indent: int, stripped: str) -> None:
        if indent:
            self.continue_current(stripped)
        elif self.of_parameters:
            match = _NUMPY_PARAM.match(stripped)
            self.describe(tuple(match.group(1).split(",")) if match else (), "")
        else:
            self.current = ()

    def _google_line(self, line: str, indent: int, stripped: str) -> None:
        if self.indent is None:
            self.indent = indent
        if indent < self.indent or (indent == 0 and not _GOOGLE_PARAM.match(stripped)):
            self.start("text", "")  # the section is over: prose again
            self.description.append(line)
            return
        match = _GOOGLE_PARAM.match(stripped) if indent == self.indent else None
        if not self.of_parameters:
            return
        if match:
            self.describe((match.group(1),), match.group(2) or "")
        else:
            self.continue_current(stripped)


def _is_numpy_header(lines: list[str], index: int) -> bool:
    return (index + 1 < len(lines) and bool(_NUMPY_TITLE.match(lines[index].strip()))
            and bool(_NUMPY_UNDERLINE.match(lines[index + 1].strip())))


def _is_google_header(lines: list[str], index: int) -> bool:
    """`Args:` alone on its line, a section's title, followed by an indented line (or, for
    parameters written at the margin, a `name: text` line)."""
    header = _GOOGLE_HEADER.match(lines[index].strip())
    if header is None or header.group(1).strip().lower() not in _GOOGLE_SECTIONS:
        return False
    following = next((lines[at] for at in range(index + 1, len(lines)) if lines[at].strip()),
                     "")
    return following[:1].isspace() or (
        header.group(1).strip().lower() in _PARAMETER_SECTIONS
        and _GOOGLE_PARAM.match(following) is not None)
