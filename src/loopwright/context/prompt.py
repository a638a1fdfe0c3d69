"""System prompt assembly: named sections, a static cacheable prefix, then the per-run part.

The static prefix (identity or the user's `system_prompt`, tool guidance or the no-tools honesty
note) depends on nothing but the configuration, so it is byte-identical across turns and runs and
a provider's prompt cache keeps hitting. Everything that varies — environment (platform, shell,
working directory, date), project instruction files, the user's own instructions file — comes
after `CACHE_BOUNDARY`.

With a small local window (`compact=True`: a local server whose window is at most
`SMALL_WINDOW` tokens) the static texts are the short ones below and each tool is advertised by
`compact_spec` (its first sentence, no parameter prose), so the system prompt and the tool
section fit in about 1,500 tokens (bench/prompt_size.py), and the per-run part goes after the
tool section (`context/cache_order.py`; in prompt mode the tool section is written before it,
`tools/prompt_format.py`): llama.cpp then reuses its prompt cache across directories.

Project instruction files are `AGENTS.md`, `CLAUDE.md` and `.loopwright/instructions.md`, looked
for in the working directory and each parent up to the repository root (the first directory with
a `.git`), else up to the filesystem root — never in or above a shared temporary directory such
as `/tmp` (`_up_from`); the outermost come first and the closest last, so the
closest wins on conflicts. The user's instructions live in `~/.config/loopwright/instructions.md`.
Both are bounded in size.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import platform
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loopwright.messages import ToolSpec
from loopwright.wire.base import CACHE_BOUNDARY

SMALL_WINDOW = 16_384  # tokens: a local window this small gets the compact prompt

IDENTITY = (
    "You are a capable assistant working inside an agent loop. Work step by step: use the tools "
    "you have when they help, read their results carefully, and stop calling tools once you can "
    "answer. Answer the user's latest request directly and concisely."
)
TOOL_GUIDANCE = (
    "When you call a tool, pass arguments as one JSON object that matches its schema. Independent "
    "read-only calls may be made together in one reply. If a tool returns an error, read it and "
    "correct the call instead of repeating it unchanged."
)
CONTEXT_GUIDANCE = (
    "A tool result that is too long is cut to its beginning and end, and the whole output is "
    "saved to a file whose path is given: read that file in parts instead of running the tool "
    "again. Notes inside <system-reminder> tags come from the runtime, not from the user. Older "
    "turns may be replaced by a summary marked as reference only: it records past work, and the "
    "user's latest message is still the request to act on."
)
NO_TOOLS = (
    "You have no tools in this conversation. Do not claim to have run commands, read files or "
    "browsed the web; say what you would need instead."
)
COMPACT_IDENTITY = (
    "You are an assistant with tools. You do the work yourself with the tools: the user cannot "
    "run them. Use a tool when it helps, read its result, and answer the user's request "
    "directly once you can."
)
# "fix the call" alone was read as advice to give: the 1.5B answered "To fix the call, you need
# to…" to the user after four different tool errors (bench dev2 split, docs/benchmarks.md)
COMPACT_TOOL_GUIDANCE = (
    "Call a tool with one JSON object of arguments that matches its schema. If a tool returns an "
    "error, read it and make a corrected call yourself (other arguments or another tool), or "
    "tell the user what failed. Text in <system-reminder> tags is from the runtime."
)
PROJECT_FILES = ("AGENTS.md", "CLAUDE.md", ".loopwright/instructions.md")
DEFAULT_MAX_INSTRUCTION_CHARS = 16_000


@dataclass(kw_only=True, frozen=True, slots=True)
class PromptSection:
    """One named part of the system prompt; `static` parts come before the cache boundary."""

    name: str
    text: str
    static: bool


def static_sections(*, user_prompt: str | None, has_tools: bool,
                    compact: bool = False) -> list[PromptSection]:
    """The cacheable prefix: identical for identical configuration."""
    if compact:
        return [PromptSection(name="identity", text=user_prompt or COMPACT_IDENTITY, static=True),
                PromptSection(name="tool_guidance" if has_tools else "no_tools",
                              text=COMPACT_TOOL_GUIDANCE if has_tools else NO_TOOLS,
                              static=True)]
    sections = [PromptSection(name="identity", text=user_prompt or IDENTITY, static=True)]
    if has_tools:
        sections.append(PromptSection(name="tool_guidance", text=TOOL_GUIDANCE, static=True))
        sections.append(PromptSection(name="context_guidance", text=CONTEXT_GUIDANCE,
                                      static=True))
    else:
        sections.append(PromptSection(name="no_tools", text=NO_TOOLS, static=True))
    return sections


def environment_section(workdir: Path, *, today: dt.date | None = None,
                        in_repository: bool | None = None) -> PromptSection:
    """Platform, shell, working directory and date (date only: the part stays stable all day);
    whether it is in a git repository is looked up unless given."""
    system = platform.system() or "unknown"
    shell = os.environ.get("SHELL") or os.environ.get("COMSPEC") or "unknown"
    lines = [
        "# Environment",
        f"- Working directory: {workdir}",
        f"- Platform: {system} {platform.release()} ({platform.machine()})",
        f"- Shell: {shell}",
        f"- Date: {(today or dt.date.today()).isoformat()}",
    ]
    if in_repository is None:
        in_repository = repository_root(workdir) is not None
    if in_repository:
        lines.append("- The working directory is inside a git repository.")
    return PromptSection(name="environment", text="\n".join(lines), static=False)


SHARED_DIRECTORIES = ("/tmp", "/var/tmp", "/dev/shm")
TEMPORARY_VARIABLES = ("TMPDIR", "TEMP", "TMP")  # where `tempfile` looks, in its order


@functools.lru_cache(maxsize=4)
def _ceilings(named: tuple[str | None, ...]) -> frozenset[str]:
    """The shared temporary directories, as written and resolved (`named`: the variables'
    values, the key so that a changed `TMPDIR` is seen)."""
    names = {*SHARED_DIRECTORIES, *(name.rstrip("/") or "/" for name in named if name)}
    names.discard("/")  # a TMPDIR of "/" would stop every walk at its start
    return frozenset(names | {os.path.realpath(name) for name in names})


def _up_from(start: Path) -> list[str]:
    """`start` and each directory above it, as strings: every run walks them (for `.git` and
    the instruction files), and `pathlib` made that walk most of a run's set-up on its own.

    The walk stops below a shared temporary directory (`/tmp`, `$TMPDIR`, …): anyone and any
    program can leave a file there, so neither it nor anything above it is a project's — an
    `AGENTS.md` or a `.git` left in `/tmp` must not become the instructions or the repository of
    a run in `/tmp/x` (or of a batch task's workspace under `$TMPDIR`), as git's
    `GIT_CEILING_DIRECTORIES` keeps git's own search out of such places. `start` itself is
    always searched."""
    ceilings = _ceilings(tuple(os.environ.get(name) for name in TEMPORARY_VARIABLES))
    directories = [directory := os.fspath(start)]
    while (parent := os.path.dirname(directory) or ".") != directory:  # "a" is in "."
        if parent in ceilings:
            break
        directories.append(directory := parent)
    return directories


def repository_root(start: Path) -> Path | None:
    """The closest directory from `start` up that holds a `.git`, or None."""
    for directory in _up_from(start):
        if os.path.exists(os.path.join(directory, ".git")):
            return Path(directory)
    return None


def find_project_files(workdir: Path) -> list[Path]:
    """Instruction files from the outermost directory searched to the working directory."""
    return project_files_below(repository_root(workdir), workdir)


def project_files_below(root: Path | None, workdir: Path) -> list[Path]:
    """`find_project_files` where the repository's root (None: not in one) is known."""
    top = os.fspath(root) if root is not None else None
    directories: list[str] = []
    for directory in _up_from(workdir):
        directories.append(directory)
        if directory == top:
            break
    found: list[Path] = []
    seen: set[Path] = set()
    for directory in reversed(directories):
        boundary: Path | None = None  # resolved only where a file is found: a run's prompt is
        for name in PROJECT_FILES:    # built on every run, and most directories hold none
            if not os.path.isfile(os.path.join(directory, name)):
                continue
            path = Path(directory, name)
            try:
                boundary = boundary or Path(top or directory).resolve()
                real = path.resolve()
                if real in seen or not real.is_relative_to(boundary):
                    continue  # a link out of the project is never read into the prompt
            except OSError:
                continue
            seen.add(real)  # CLAUDE.md is often a link to AGENTS.md: read it once
            found.append(path)
    return found


INSTRUCTION_TAIL_PROBE = 100_000  # how far past the budget we look to say how much was left out


def _bounded_files(title: str, intro: str, paths: list[Path], max_chars: int) -> str:
    parts: list[str] = []
    left = max_chars
    for path in paths:
        try:  # never more than the budget (+1 to see there is more): a huge file costs nothing
            with path.open(encoding="utf-8", errors="replace") as handle:
                text = handle.read(max(left, 0) + 1).strip()
                more = len(handle.read(INSTRUCTION_TAIL_PROBE)) if len(text) > left else 0
        except OSError:
            continue
        if not text:
            continue
        if left <= 0:
            parts.append(f"## {path}\n[not included: the instruction budget is used up; read the "
                         "file if it matters]")
            continue
        if len(text) > left:
            unread = len(text) - left + more
            count = f"{unread}" if more < INSTRUCTION_TAIL_PROBE else f"over {unread}"
            text = (text[:left].rstrip() + f"\n[… {count} more characters; read "
                    f"{path} for the rest]")
        left -= len(text)
        parts.append(f"## {path}\n{text}")
    if not parts:
        return ""
    return f"# {title}\n{intro}\n\n" + "\n\n".join(parts)


def project_section(workdir: Path, *, root: Path | None,
                    max_chars: int = DEFAULT_MAX_INSTRUCTION_CHARS) -> PromptSection | None:
    """The project's instruction files, or None when there are none (`root`: the repository's
    root, None outside one)."""
    text = _bounded_files(
        "Project instructions",
        "From instruction files in the project; when they disagree, the closest to the working "
        "directory (listed last) wins.", project_files_below(root, workdir), max_chars)
    return PromptSection(name="project", text=text, static=False) if text else None


def user_instructions_path() -> Path:
    home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(home) / "loopwright" / "instructions.md"


def user_section(*, max_chars: int = DEFAULT_MAX_INSTRUCTION_CHARS) -> PromptSection | None:
    """The user's own standing instructions, or None."""
    path = user_instructions_path()
    if not path.is_file():
        return None
    text = _bounded_files("User instructions", "The user's standing instructions.", [path],
                          max_chars)
    return PromptSection(name="user", text=text, static=False) if text else None


def assemble(sections: list[PromptSection]) -> str:
    """Static sections, the boundary, then the per-run sections."""
    static = "\n\n".join(s.text for s in sections if s.static and s.text)
    dynamic = "\n\n".join(s.text for s in sections if not s.static and s.text)
    return static + CACHE_BOUNDARY + dynamic if dynamic else static


def build_system_prompt(*, user_prompt: str | None, has_tools: bool,
                        per_run_sections: list[str] | None = None,
                        static_notes: list[str] | None = None,
                        workdir: Path | None = None,
                        max_instruction_chars: int = DEFAULT_MAX_INSTRUCTION_CHARS,
                        today: dt.date | None = None,
                        project: bool = True, project_instructions: bool = True,
                        compact: bool = False) -> str:
    """The system prompt: static prefix (identical across turns and runs), boundary, per-run part.

    A user-supplied `system_prompt` replaces the identity section; the rest stays.
    `static_notes` join the static prefix (they must depend on configuration only). With a
    `workdir`, the per-run part holds the environment and the instruction files found from it
    (unless `project_instructions` is false: an untrusted project, `loopwright.trust`).
    `project=False`: the workdir is not a project (a scratch directory, as the batch's shared
    empty one): nothing is looked for in it or above it, and the environment and the user's
    instructions file stay.
    `compact`: the short texts of a small local window (module docstring).
    """
    sections = static_sections(user_prompt=user_prompt, has_tools=has_tools, compact=compact)
    sections.extend(PromptSection(name="note", text=s, static=True)
                    for s in static_notes or [] if s)  # e.g. the sandbox: config-only, cacheable
    if workdir is not None:
        root = repository_root(workdir) if project else None
        sections.append(environment_section(workdir, today=today,
                                            in_repository=root is not None))
        own = (project_section(workdir, max_chars=max_instruction_chars, root=root)
               if project and project_instructions else None)
        for optional in (own, user_section(max_chars=max_instruction_chars)):
            if optional is not None:
                sections.append(optional)
    sections.extend(PromptSection(name="extra", text=s, static=False)
                    for s in per_run_sections or [] if s)
    return assemble(sections)


_FIRST_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)", re.S)
# prose, and `additionalProperties` (a dozen tokens per tool; the full schema still validates)
_PROSE_KEYS = frozenset({"description", "title", "examples", "additionalProperties"})


def compact_spec(spec: ToolSpec) -> ToolSpec:
    """`spec` as a small window advertises it: the first sentence of its description and its
    parameters' schema without prose (descriptions, titles, examples) or `additionalProperties`.
    The tool still validates against its full schema."""
    text = " ".join(spec.description.split())
    first = _FIRST_SENTENCE.match(text)
    return replace(spec, description=first.group(1) if first else text,
                   parameters=_without_prose(spec.parameters))


def _without_prose(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _without_prose(v) for k, v in schema.items()
                if k not in _PROSE_KEYS or (isinstance(v, dict) and k != "additionalProperties")}
    if isinstance(schema, list):
        return [_without_prose(item) for item in schema]
    return schema

