"""`grep`: search file contents with ripgrep when it is installed, else a Python fallback.

Both engines print the same shape (`path:line:text` for matches, `path-line-text` for context
lines, `--` between separate groups) and honour the same caps, so the model cannot tell them apart.
Hidden files, VCS and dependency directories, binary files and secrets files are skipped. The
secrets list is `loopwright.safety.sensitive`, the same for both engines: ripgrep gets it as
exclusion globs placed after the model's own `glob` (later globs win, so a model-chosen
`--glob .env` cannot bring a secret back), and every path it prints is checked against the list
again before the line is shown. ripgrep runs in a read-only, offline sandbox with a scrubbed
environment when one can be made.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from loopwright.builtin.diff import read_side
from loopwright.builtin.listing import SKIPPED_DIRS
from loopwright.builtin.workspace import display_path, resolve_path, workspace_roots
from loopwright.errors import ToolError
from loopwright.safety.sandbox import call_policy, host_program, prepare_helper_launch
from loopwright.safety.sensitive import is_secret_path, require_secret_approval, ripgrep_exclusions
from loopwright.tools.base import Tool, ToolContext, tool

Engine = Literal["auto", "ripgrep", "python"]
MAX_OUTPUT_CHARS = 30_000
MAX_LINE_CHARS = 300
MAX_FILE_BYTES = 20 * 1024 * 1024
_RG_LINE = re.compile(r"(\d+)([:-])")


def make_grep(engine: Engine = "auto") -> Tool:
    """A `grep` tool bound to an engine: "auto" (ripgrep if on PATH), "ripgrep" or "python"."""

    @tool(name="grep", read_only=True, core=True, tags={"search", "files"})
    async def grep(
        pattern: str,
        ctx: ToolContext,
        path: str = ".",
        glob: str | None = None,
        ignore_case: bool = False,
        context: Annotated[int, Field(ge=0, le=10)] = 0,
        files_only: bool = False,
        max_results: Annotated[int, Field(ge=1, le=2000)] = 200,
    ) -> str:
        """Search file contents for a regular expression (ripgrep syntax). Prints
        `path:line:text` per match, sorted by path (`path-line-text` for context lines). Skips
        hidden files, .git, node_modules, binary files and secrets files.

        Args:
            pattern: Regular expression to look for, e.g. `def \\w+_handler` or `TODO`.
            path: File or directory to search, relative to the working directory.
            glob: Only search files whose name matches this glob, e.g. `*.py` or `src/**/*.ts`.
            ignore_case: Match without regard to case.
            context: Lines of context to show around each match.
            files_only: Print only the paths of matching files.
            max_results: Stop after this many matches (or files with files_only).
        """
        target = resolve_path(ctx, path, reading=True)  # like read_file: skill folders too
        if not target.exists():
            raise ToolError(f"{display_path(ctx, target)} does not exist.")
        if target.is_file():
            await require_secret_approval(ctx, target, verb="search")
        query = Query(pattern=pattern, ignore_case=ignore_case, glob=glob, context=context,
                      files_only=files_only, max_results=max_results)
        # never a ripgrep a command could have put on PATH in the workspace
        have_rg = host_program("rg", workspace_roots(ctx)) is not None
        use_rg = engine == "ripgrep" or (engine == "auto" and have_rg)
        if engine == "ripgrep" and not have_rg:
            raise ToolError("ripgrep (rg) is not installed.")
        if not any(target == root or target.is_relative_to(root) for root in workspace_roots(ctx)):
            # A read-only root (a user's skill folder) lies in ~/.config/loopwright, which the
            # sandbox hides from commands: search it in-process, as read_file reads it.
            use_rg = False
        workdir = Path(ctx.workdir).resolve()
        if use_rg:
            lines, matches = await _ripgrep(query, target, workdir, ctx)
        else:
            lines, matches = await asyncio.to_thread(_python_grep, query, target, workdir)
        return _render(lines, matches, query)

    return grep


class Query:
    """One search's parameters."""

    def __init__(self, *, pattern: str, ignore_case: bool, glob: str | None, context: int,
                 files_only: bool, max_results: int) -> None:
        self.pattern = pattern
        self.ignore_case = ignore_case
        self.glob = glob
        self.context = context
        self.files_only = files_only
        self.max_results = max_results


def _render(lines: list[str], matches: int, query: Query) -> str:
    if matches == 0:
        return f"No matches for {query.pattern!r}."
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > MAX_OUTPUT_CHARS:
            out.append(f"[output cut at {MAX_OUTPUT_CHARS:,} characters; narrow the search]")
            break
        out.append(line)
        used += len(line) + 1
    if matches >= query.max_results:
        unit = "files" if query.files_only else "matches"
        out.append(f"[stopped after {query.max_results} {unit}; narrow the pattern or path, or "
                   "raise max_results]")
    return "\n".join(out)


# --- ripgrep -------------------------------------------------------------------------------------


async def _ripgrep(query: Query, target: Path, workdir: Path, ctx: ToolContext
                   ) -> tuple[list[str], int]:
    args = ["rg", "--no-heading", "--with-filename", "--line-number", "--color", "never",
            "--no-config", "--sort", "path", "--max-columns", str(MAX_LINE_CHARS),
            "--max-columns-preview", "--regexp", query.pattern]
    if query.ignore_case:
        args.append("--ignore-case")
    if query.context:
        args += ["--context", str(query.context)]
    if query.files_only:
        args.append("--files-with-matches")
    else:
        args.append("--null")  # path NUL rest: paths are read back exactly, to filter them
    if query.glob:
        args += ["--glob", query.glob]
    for name in sorted(SKIPPED_DIRS):  # ripgrep skips them only when .gitignore says so
        args += ["--glob", f"!{name}/"]
    for pattern in ripgrep_exclusions():  # last: they override the model's glob
        args += ["--glob", pattern]
    args += ["--", _relative_arg(target, workdir)]
    launch = await prepare_helper_launch(call_policy(ctx), args, cwd=workdir,
                                         roots=workspace_roots(ctx))  # read-only sandbox
    process = await asyncio.create_subprocess_exec(
        *launch.argv, cwd=workdir, env=launch.env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    lines: list[str] = []
    matches = 0
    stopped_early = True  # until ripgrep's output ends on its own
    try:
        async for raw in process.stdout:
            parsed = _rg_line(raw.decode("utf-8", errors="replace").rstrip("\n"),
                              query.files_only)
            if parsed is None:
                continue
            line, is_match = parsed
            if line == "--":
                if lines and lines[-1] != "--":
                    lines.append(line)
                continue
            if is_match and matches >= query.max_results:
                break
            matches += is_match
            lines.append(line)
        else:
            stopped_early = False
    finally:
        # Only kill a ripgrep we stopped reading: killing one that already exited would reap it
        # behind asyncio's back and lose its exit code.
        if stopped_early and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        stderr = (await process.stderr.read()).decode("utf-8", errors="replace")
        code = await process.wait()
    if code == 2 and matches == 0:
        raise ToolError(f"grep failed: {stderr.strip() or 'ripgrep exited with an error'}")
    return _trim_trailing_separator(lines), matches


def _rg_line(line: str, files_only: bool) -> tuple[str, bool] | None:
    """A ripgrep output line in our shape and whether it is a match; None for a secrets file."""
    if line == "--":
        return line, False
    if files_only:
        path = line.removeprefix("./")
        return None if is_secret_path(path) else (path, True)
    path, _, rest = line.partition("\0")
    path = path.removeprefix("./")
    found = _RG_LINE.match(rest)
    if is_secret_path(path) or found is None:
        return None
    return f"{path}{found.group(2)}{rest}", found.group(2) == ":"


def _relative_arg(target: Path, workdir: Path) -> str:
    try:
        return str(target.relative_to(workdir)) or "."
    except ValueError:
        return str(target)


def _trim_trailing_separator(lines: list[str]) -> list[str]:
    while lines and lines[-1] == "--":
        lines.pop()
    return lines


# --- the Python fallback -------------------------------------------------------------------------


def _python_grep(query: Query, target: Path, workdir: Path) -> tuple[list[str], int]:
    flags = re.IGNORECASE if query.ignore_case else 0
    try:
        regex = re.compile(query.pattern, flags)
    except re.error as exc:
        raise ToolError(f"grep failed: invalid regular expression {query.pattern!r}: {exc}"
                        ) from exc
    lines: list[str] = []
    matches = 0
    for file in _candidate_files(target, query.glob):
        if matches >= query.max_results:
            break
        shown = _relative_arg(file, workdir)
        matches += _grep_file(file, shown, regex, query, lines, query.max_results - matches)
    return _trim_trailing_separator(lines), matches


def _grep_file(file: Path, shown: str, regex: re.Pattern[str], query: Query, out: list[str],
               budget: int) -> int:
    """Append one file's output to `out`; return its number of matches (≤ budget)."""
    data = read_side(file, MAX_FILE_BYTES)  # never a named pipe (it would wait for ever)
    if not isinstance(data, bytes) or b"\0" in data[:8192]:
        return 0
    text_lines = data.decode("utf-8", errors="replace").splitlines()
    hits = [n for n, line in enumerate(text_lines) if regex.search(line)][:budget]
    if not hits:
        return 0
    if query.files_only:
        out.append(shown)
        return 1
    if out and query.context:
        out.append("--")
    printed = -1
    for n in hits:
        start = max(n - query.context, printed + 1)
        if query.context and printed >= 0 and start > printed + 1:
            out.append("--")
        for m in range(start, min(n + query.context, len(text_lines) - 1) + 1):
            sep = ":" if regex.search(text_lines[m]) else "-"
            out.append(f"{shown}{sep}{m + 1}{sep}{_cut(text_lines[m])}")
            printed = m
    return len(hits)


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"[Omitted long line with {len(line)} characters: {line[:MAX_LINE_CHARS]}]"


def _candidate_files(target: Path, glob: str | None) -> Iterator[Path]:
    if target.is_file():
        yield target
        return
    for directory, dirnames, filenames in os.walk(target):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in sorted(filenames):
            path = Path(directory, name)
            if name.startswith(".") or is_secret_path(path) or path.is_symlink():
                continue
            if glob and not _glob_matches(glob, path.relative_to(target)):
                continue
            yield path


def _glob_matches(glob: str, relative: Path) -> bool:
    if "/" not in glob:
        return fnmatch.fnmatch(relative.name, glob)
    return relative.match(glob) or fnmatch.fnmatch(str(relative), glob)


grep = make_grep()
