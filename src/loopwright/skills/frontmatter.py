"""The front-matter of a `SKILL.md`: a YAML block between two `---` lines at the top of the file.

The file is hostile input (a cloned repository may ship any skill folder), so everything is
bounded before YAML sees it: only the first `MAX_HEAD_BYTES` of the file are read to find the
block, the block itself may be at most `MAX_FRONT_MATTER_CHARS`, and only `name` and
`description` are kept, each checked for type and size. Anything wrong raises `SkillFormatError`
with one line saying what and how to fix it; the caller skips that skill.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

MAX_HEAD_BYTES = 16_384  # read to find the front-matter
MAX_FRONT_MATTER_CHARS = 8_192
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1_024
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_FENCE = "---"


class SkillFormatError(ValueError):
    """A SKILL.md whose front-matter cannot be used; the message is one line."""


@dataclass(frozen=True, slots=True)
class FrontMatter:
    name: str
    description: str
    body_offset: int  # characters of the file before the body (front-matter and its fences)


def parse_front_matter(text: str) -> FrontMatter:
    """The name and description at the head of `text` (the start of a SKILL.md)."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != _FENCE:
        raise SkillFormatError("no front-matter: the file must start with a '---' line, then "
                               "'name:' and 'description:', then '---'")
    consumed = len(lines[0])
    block: list[str] = []
    for line in lines[1:]:
        consumed += len(line)
        if line.strip() == _FENCE:
            break
        block.append(line)
        if sum(map(len, block)) > MAX_FRONT_MATTER_CHARS:
            raise SkillFormatError(f"front-matter longer than {MAX_FRONT_MATTER_CHARS:,} "
                                   "characters; keep it to name and description")
    else:
        raise SkillFormatError("front-matter not closed: add a '---' line after it")
    data = _load_yaml("".join(block))
    name = _field(data, "name", MAX_NAME_CHARS)
    if not NAME_PATTERN.fullmatch(name):
        raise SkillFormatError(f"name {name[:40]!r} may only hold letters, digits, '-', '_' "
                               "and '.', starting with a letter or digit")
    description = " ".join(_field(data, "description", MAX_DESCRIPTION_CHARS).split())
    return FrontMatter(name=name, description=description, body_offset=consumed)


def _load_yaml(block: str) -> dict[str, Any]:
    import yaml  # only when a skill is found: it is not cheap to import

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(block, Loader=loader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 2}" if where is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise SkillFormatError(f"front-matter is not valid YAML{at}: {problem}") from None
    if not isinstance(data, dict):
        raise SkillFormatError("front-matter must be a mapping with 'name' and 'description'")
    return data


def _field(data: dict[str, Any], key: str, limit: int) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SkillFormatError(f"front-matter has no {key!r} text")
    value = value.strip()
    hidden = next((c for c in value if c not in "\t\n\r"
                   and unicodedata.category(c) in ("Cc", "Cf")), None)
    if hidden is not None:  # a terminal escape or bidi override would reach the prompt and CLI
        raise SkillFormatError(f"{key} holds a control or invisible character "
                               f"(U+{ord(hidden):04X}); remove it")
    if len(value) > limit:
        raise SkillFormatError(f"{key} is {len(value):,} characters, over the {limit:,} limit")
    return value
