"""When the commands ran that a root's first walk left unchecked (`planted.py`): each one's span,
from just before it started to its end. What changed within them (by ctime, which no command
sets back) is taken for theirs when the check comes; what changed outside them — what the user
wrote while no such command ran — stays the user's. Kept in loopwright's cache (one file per
root, `planted-walks/`, outside the sandbox's reach) until checked, should this process end
first: the next one checks them."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from loopwright.safety.sandbox.changes import Span, Window


@dataclass(kw_only=True)
class _Commands:
    """A root's unchecked commands: ended (not yet checked against a whole tree) and running."""

    ended: list[Span] = field(default_factory=list)
    running: dict[int, int] = field(default_factory=dict)  # token -> start, in ns
    mark: Path | None = None  # the file that keeps them for the next process

    def window(self) -> Window:
        return Window((*self.ended, *(Span(start) for start in self.running.values())))


_lock = threading.Lock()  # also held while the mark is written: the last write is the newest
_roots: dict[Path, _Commands] = {}
_tokens = itertools.count(1)


def recall(root: Path, marks: Path, *, taken_ns: int, walking: bool) -> None:
    """At the first walk of `root` in this process (taken at `taken_ns`): the spans an earlier
    process's unchecked commands left in `marks`, for the first check here; `walking`: this
    walk gave up too, so the commands from now on are kept there as well."""
    mark = marks / hashlib.blake2b(os.fsencode(root), digest_size=8).hexdigest()
    spans: tuple[Span, ...] = ()
    with contextlib.suppress(OSError, ValueError):
        spans = Window.parse(mark.read_text(), open_until=taken_ns).spans
    if spans or walking:
        with _lock:
            _roots[root] = _Commands(ended=list(spans), mark=mark)


def begin(root: Path) -> int:
    """A command about to start unchecked in `root`: the token its `end` gives back."""
    token = next(_tokens)
    with _lock:
        commands = _roots.setdefault(root, _Commands())
        commands.running[token] = time.time_ns()
        _save(commands)
    return token


def end(root: Path, token: int) -> None:
    """The command `token` stands for has ended (nothing of it runs any more)."""
    now = time.time_ns()
    with _lock:
        commands = _roots.get(root)
        start = commands.running.pop(token, None) if commands is not None else None
        if commands is None or start is None:
            return
        commands.ended.append(Span(start, now))
        _save(commands)


def current(root: Path) -> Window | None:
    """The spans of `root`'s unchecked commands not yet checked, the running ones open."""
    with _lock:
        commands = _roots.get(root)
        if commands is None or not (commands.ended or commands.running):
            return None
        return commands.window()


def checked(root: Path, window: Window) -> None:
    """`window` was checked against a whole tree: its ended spans are done (a running one is
    checked again at its end); with none left, the mark goes."""
    with _lock:
        commands = _roots.get(root)
        if commands is None:
            return
        commands.ended = [span for span in commands.ended if span not in window.spans]
        if commands.ended or commands.running:
            _save(commands)
            return
        del _roots[root]
        if commands.mark is not None:
            with contextlib.suppress(OSError):
                commands.mark.unlink()


def _save(commands: _Commands) -> None:
    if commands.mark is None:
        return
    with contextlib.suppress(OSError):
        commands.mark.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        commands.mark.write_text(str(commands.window()))
