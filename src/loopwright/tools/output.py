"""Output bounding: a tool result over the cap is spilled whole to a file; the model gets a head +
tail preview, the path, and how to read the rest.

`OutputBounder` is a `ResultFilter`, so it applies to every tool (built-in, user, MCP). The cap is
sized from the context window (see `context/window.py`). Spill files live in a directory of their
session's (mode 0700) under `<cache_dir>/spill` (`Settings.cache_dir`, else
`settings.default_cache_dir()`): its name is an HMAC of the session id under a key kept in the
spill root, so no other session can name it, and the sandbox shows a command only its own
session's (`safety/sandbox/mounts.py`). A sub-agent's directory lies inside its parent's
(`nest_child_spills`): a parent reads what its children spilled, a child reads neither its
parent's nor its siblings'. Files older than seven days (in the session directories
and, from before them, in the root) are removed the first time a process bounds output there.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import hmac
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from loopwright.tools.base import ToolContext
from loopwright.tools.execute import PreparedCall, ToolOutcome

SPILL_RETENTION_SECONDS = 7 * 24 * 3600
SPILL_ROOT_SERVICE = "spill_root"
"""`ToolContext.services` key holding the run's spill root (the file tools refuse what of it is
not the calling session's; absent: the default cache's)."""
SPILL_KEY_FILE = ".key"  # in the spill root: the secret the session directories' names hash with
SPILL_MARKER = "Full output saved to "
NESTING_ALLOWANCE = 4  # directory levels `preview_overhead` leaves room for (a sub-agent's)
PREVIEW_SHARE = 0.5  # of the cap; the preview must leave room for the next results
HEAD_SHARE = 2 / 3  # of the preview: beginnings usually say what the output is

_cleaned: set[Path] = set()
_cleaned_lock = threading.Lock()


def spill_directory(cache_dir: str | os.PathLike[str] | None) -> Path:
    """Where spill files go for a given `cache_dir` setting (every run asks: the path is made
    once per setting and environment, not with `pathlib` each time)."""
    environ = os.environ
    return _spill_directory(os.fspath(cache_dir) if cache_dir else None,
                            environ.get("XDG_CACHE_HOME"), environ.get("HOME"))


@functools.lru_cache(maxsize=16)
def _spill_directory(cache_dir: str | None, xdg_cache_home: str | None,
                     home: str | None) -> Path:
    # the two variables are part of the key: the default and `~` are read from them
    if cache_dir:
        return Path(cache_dir).expanduser() / "spill"
    from loopwright.settings import default_cache_dir

    return default_cache_dir() / "spill"


@functools.lru_cache(maxsize=16)
def _spill_key(root: Path) -> bytes:
    """The spill root's secret, made on first use (0600, in a 0700 root)."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = root / SPILL_KEY_FILE
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
        raise OSError(f"{path} is not a spill key (too short); remove it") from None
    key = os.urandom(32)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(key)
    return key


def _directory_name(root: Path, scope: str) -> str:
    digest = hmac.new(_spill_key(root), scope.encode("utf-8"), hashlib.sha256).hexdigest()
    return f"s-{digest[:16]}"  # 64 bits: short in every preview, unguessable still


def session_spill_directory(root: Path, scope: str) -> Path:
    """The directory of `root` holding one session's spills (`scope`: its session id, else its
    run id): a sub-agent's lies inside its parent's (`nest_child_spills`), where the parent's
    commands see it. Reads, maybe makes, the root's key: blocking file I/O, off the event
    loop. `OSError` for a link in the root that leads out of it."""
    own = root / _directory_name(root, scope)
    if not own.is_symlink():
        return own
    nested = own.resolve()  # the runtime made the link; a link out of the root is no spill
    if not nested.is_relative_to(root.resolve()) or nested == root.resolve():
        raise OSError(f"{own} leads out of the spill root; remove it")
    return nested


def nest_child_spills(root: Path, parent_scope: str, child_scope: str) -> Path:
    """Make the spill directory of the sub-agent `child_scope` one inside its parent's: the
    parent's commands (which see their own directory) read the spills its child's answer
    names; the child sees only its own, not its parent's or its siblings'. The child's name
    in the root becomes a link to it, so whatever spills for the child's session (its tools,
    its compaction) lands there. A child that spilled before (a session continued) keeps its
    directory. Blocking file I/O. Returns the child's directory."""
    parent = session_spill_directory(root, parent_scope)
    name = _directory_name(root, child_scope)
    nested = parent / name
    nested.mkdir(mode=0o700, parents=True, exist_ok=True)
    parent.chmod(0o700)  # `parents=True` makes the parent with the default mode
    # nested already (a child continued after a crash), or a directory of its own: kept
    with contextlib.suppress(FileExistsError):
        os.symlink(nested, root / name)
    return session_spill_directory(root, child_scope)


def is_foreign_spill(path: Path, root: Path, scope: str) -> bool:
    """Whether `path` (resolved) lies in the spill root `root` but outside the directory of
    `scope`: another session's spill, or one of the flat layout's, whoever made it."""
    root = root.resolve()
    if not path.is_relative_to(root):
        return False
    try:
        return not path.is_relative_to(session_spill_directory(root, scope))
    except OSError:  # no key: nothing in the root can be this session's
        return True


def run_spill_root(ctx: ToolContext) -> Path:
    """The spill root of the run a call belongs to (the default cache's outside a run)."""
    return Path(ctx.services.get(SPILL_ROOT_SERVICE) or spill_directory(None))


def spill_scope(ctx: ToolContext) -> str:
    """Whose spills a call's are: its session's, else (no session) its run's."""
    return ctx.session_id or ctx.run_id or "no-run"


def clean_spill_directory(directory: Path, *, max_age: float = SPILL_RETENTION_SECONDS,
                          now: float | None = None) -> int:
    """Remove spill files older than `max_age` seconds, in `directory` and in its session
    directories (left empty, they go too); returns how many files went."""
    cutoff = (time.time() if now is None else now) - max_age
    removed = 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                removed += clean_spill_directory(Path(entry.path), max_age=max_age, now=now)
                if not any(os.scandir(entry.path)):
                    os.rmdir(entry.path)
            elif (entry.is_file(follow_symlinks=False) and entry.name != SPILL_KEY_FILE
                  and entry.stat().st_mtime < cutoff):
                os.unlink(entry.path)
                removed += 1
            elif (entry.is_symlink() and not os.path.exists(entry.path)
                  and entry.stat(follow_symlinks=False).st_mtime < cutoff):
                os.unlink(entry.path)  # a sub-agent's name whose directory went
        except OSError:
            continue  # another process got there first, or no permission: not our problem
    return removed


def clean_once(directory: Path) -> None:
    """Clean `directory` once per process (runs start often; a scan each time is waste)."""
    with _cleaned_lock:
        if directory in _cleaned:
            return
        _cleaned.add(directory)
    clean_spill_directory(directory)


def spill_to_file(text: str, directory: Path, *, label: str) -> Path:
    """Write `text` to a new file in `directory`; raises `OSError` when that is impossible."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = directory / f"{stamp}-{_file_label(label)}-{uuid.uuid4().hex[:8]}.txt"
    path.write_text(text, encoding="utf-8")
    return path


def _file_label(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", label)[:60] or "output"


def preview_overhead(root: Path, label: str) -> int:
    """At most how many characters `preview` adds to the text it keeps (header, with the spill
    path of `label` under the spill root `root`, and the omission line), for a caller that
    must fit the whole in a size."""
    # a sub-agent's directory lies in its parent's: room for a few levels of delegation
    nesting = "/".join([f"s-{'0' * 16}"] * NESTING_ALLOWANCE)
    longest = root / nesting / f"{'0' * 8}-{'0' * 6}-{_file_label(label)}-{'0' * 8}.txt"
    return len(preview("x", 0, path=longest)) - 1 + 5 * 9  # its five counts: 1 digit here


def _cut_head(text: str, size: int) -> str:
    head = text[:size]
    newline = head.rfind("\n")
    return head[: newline + 1] if newline > size * 0.7 else head  # end on a line when near


def _cut_tail(text: str, size: int) -> str:
    tail = text[-size:] if size > 0 else ""
    newline = tail.find("\n")
    return tail[newline + 1:] if 0 <= newline < size * 0.3 else tail


def preview(text: str, size: int, *, path: Path | None, error: str | None = None) -> str:
    """Head + tail of `text` in about `size` characters, under a header saying what was cut
    and where the whole is."""
    size = max(200, size)
    head = _cut_head(text, int(size * HEAD_SHARE))
    tail = _cut_tail(text[len(head):], size - len(head))
    omitted = len(text) - len(head) - len(tail)
    lines = text.count("\n") + 1
    if path is not None:
        where = (f"{SPILL_MARKER}{path} — read it in parts (a file-reading tool with an offset, "
                 "or a search) instead of running the tool again.")
    else:
        where = f"The full output could not be saved ({error}); only this preview remains."
    header = (f"[Output too long: {len(text):,} characters, {lines:,} lines; showing the first "
              f"{len(head):,} and last {len(tail):,} characters. {where}]")
    return f"{header}\n{head}\n[… {omitted:,} characters omitted …]\n{tail}"


def bound_text(text: str, max_chars: int, root: Path, *, label: str, scope: str,
               preview_chars: int | None = None) -> tuple[str, Path | None]:
    """`text` unchanged if it fits in `max_chars`, else (preview, spill path or None); the file
    goes in the spill root `root`'s directory of `scope` (`spill_scope`). The preview takes
    `preview_chars` (default: half the cap). Blocking file I/O."""
    if len(text) <= max_chars:
        return text, None
    try:
        directory = session_spill_directory(root, scope)
        path: Path | None = spill_to_file(text, directory, label=label)
        error = None
    except OSError as exc:
        path, error = None, f"{type(exc).__name__}: {exc}"
    size = int(max_chars * PREVIEW_SHARE) if preview_chars is None else preview_chars
    return preview(text, size, path=path, error=error), path


class OutputBounder:
    """A `ResultFilter` that spills long tool results and hands the model a preview."""

    def __init__(self, *, directory: Path, max_chars: int | Callable[[], int]) -> None:
        self.directory = directory
        self._max_chars = max_chars
        clean_once(directory)

    @property
    def max_chars(self) -> int:
        return self._max_chars() if callable(self._max_chars) else self._max_chars

    async def __call__(self, prepared: PreparedCall | None, outcome: ToolOutcome,
                       ctx: ToolContext) -> ToolOutcome:
        limit = self.max_chars
        if len(outcome.content) <= limit:
            return outcome
        label = f"{outcome.call.name}-{outcome.call.id}"
        text, path = await asyncio.to_thread(bound_text, outcome.content, limit, self.directory,
                                             label=label, scope=spill_scope(ctx))
        data = {**outcome.data, "original_chars": len(outcome.content),
                "spilled_to": str(path) if path else None}
        return replace(outcome, content=text, data=data)
