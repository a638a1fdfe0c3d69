"""Keys typed in `chat` while nothing reads them — a run still printing — wait for the next prompt.

prompt_toolkit puts the terminal in raw mode only while its prompt is open; between prompts the
terminal would be in its ordinary canonical mode, where the kernel edits lines and echoes keys
itself. A Ctrl-D typed then is an end-of-file for a reader that is not there: the kernel keeps it
as a NUL byte, which the next prompt reads as Ctrl-@ and ignores, so the chat never ends. Text
typed then is echoed into the answer being drawn. So for the whole chat the terminal is held
non-canonical without echo (Ctrl-C still a signal): every key stays a byte in the kernel's queue,
unseen, until the next prompt reads it as typed.

A question asked during a run (approval, clarify) reads a line in the terminal's own mode. The
keys typed before it was shown are set aside first, so they cannot answer it (a "y" typed ahead
must not approve a command nobody has seen), and the next prompt gets them (`take_pending`).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Hold:
    fd: int
    own: list[Any]  # the terminal's attributes before the chat: restored at its end
    held: list[Any]
    pending: bytearray = field(default_factory=bytearray)


_holds: list[_Hold] = []  # the hold in force: one chat per process at a time


@contextlib.contextmanager
def hold_keys(enabled: bool = True) -> Iterator[None]:
    """Hold stdin's terminal in non-canonical mode, no echo, for the block; a no-op when not
    `enabled` or stdin is not a terminal."""
    import termios  # here: Windows has none, and `run` imports this module through approval.py

    fd = sys.stdin.fileno() if enabled and sys.stdin.isatty() else -1
    try:
        own = termios.tcgetattr(fd) if fd >= 0 else None
    except termios.error:
        own = None
    if own is None:
        yield
        return
    held = [*own[:6], list(own[6])]
    held[0] &= ~termios.ICRNL  # Enter stays "\r", as prompt_toolkit reads it in raw mode
    held[3] &= ~(termios.ICANON | termios.ECHO | termios.IEXTEN)
    held[6][termios.VMIN], held[6][termios.VTIME] = 1, 0
    hold = _Hold(fd, own, held)
    # TCSANOW, never TCSAFLUSH: keys typed before the chat started are kept too
    termios.tcsetattr(fd, termios.TCSANOW, held)
    _holds.append(hold)
    try:
        yield
    finally:
        _holds.remove(hold)
        _set(hold, hold.own)


def release() -> None:
    """The terminal's own mode back now (leaving with `os._exit`, which runs no `finally`)."""
    for hold in _holds:
        _set(hold, hold.own)


@contextlib.contextmanager
def line_mode() -> Iterator[None]:
    """The terminal's own mode (line editing, echo) while a question reads its answer, the keys
    typed before it kept for the next prompt; a no-op outside `hold_keys`."""
    if not _holds:
        yield
        return
    hold = _holds[-1]
    # Switch first, then drain: on the switch the kernel makes what is queued one readable line,
    # so a select with no timeout sees all of it and the read never waits.
    _set(hold, hold.own)
    try:
        while select.select([hold.fd], [], [], 0)[0]:
            chunk = os.read(hold.fd, 4096)
            if not chunk:
                break
            hold.pending += chunk
        yield
    finally:
        _set(hold, hold.held)


def take_pending() -> bytes:
    """The keys `line_mode` set aside, once: the next prompt's first input."""
    if not _holds:
        return b""
    pending = bytes(_holds[-1].pending)
    _holds[-1].pending.clear()
    return pending


def _set(hold: _Hold, attributes: list[Any]) -> None:
    import termios  # imported already by the hold_keys that made `hold`

    with contextlib.suppress(termios.error):  # the terminal may be gone (a closed window)
        termios.tcsetattr(hold.fd, termios.TCSANOW, attributes)
