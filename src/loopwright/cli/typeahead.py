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

Ctrl-Z during a run stops the chat, and the shell that gets the terminal back puts its own cooked
mode on it; `fg` does not give the chat's mode back. So on SIGCONT the mode the chat is in at that
moment is set again: the held one during a run, the terminal's own inside `line_mode`, none while
prompt_toolkit's prompt reads (`prompt_reads`: its raw mode is its own, and it has no SIGCONT
handler to be clobbered by one of ours).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import FrameType, ModuleType
from typing import Any


@dataclass
class _Hold:
    fd: int
    own: list[Any]  # the terminal's attributes before the chat: restored at its end
    held: list[Any]
    wanted: list[Any] | None  # the mode a SIGCONT sets again; None while a prompt reads
    pending: bytearray = field(default_factory=bytearray)


_holds: list[_Hold] = []  # the hold in force: one chat per process at a time


@contextlib.contextmanager
def hold_keys(enabled: bool = True) -> Iterator[None]:
    """Hold stdin's terminal in non-canonical mode, no echo, for the block; a no-op when not
    `enabled` or stdin is not a terminal (or the system has no termios: Windows)."""
    termios = _termios()
    own = _own_mode(termios) if termios is not None and enabled else None
    if termios is None or own is None:
        yield
        return
    fd = sys.stdin.fileno()
    held = [*own[:6], list(own[6])]
    held[0] &= ~termios.ICRNL  # Enter stays "\r", as prompt_toolkit reads it in raw mode
    held[3] &= ~(termios.ICANON | termios.ECHO | termios.IEXTEN)
    held[6][termios.VMIN], held[6][termios.VTIME] = 1, 0
    hold = _Hold(fd, own, held, wanted=held, pending=_typed_while_starting(fd))
    # TCSANOW, never TCSAFLUSH: keys typed before the chat started are kept too
    termios.tcsetattr(fd, termios.TCSANOW, held)
    _holds.append(hold)
    try:
        with _set_again_when_continued():
            yield
    finally:
        _holds.remove(hold)
        _set(hold, hold.own)


def _typed_while_starting(fd: int) -> bytearray:
    """The lines typed before the hold, read in the terminal's own mode: there a Ctrl-D at the
    start of a line is an end-of-file, which the switch to the held mode would turn into a NUL
    byte the prompt ignores. Read now, it is kept as the Ctrl-D key for the first prompt."""
    typed = bytearray()
    while select.select([fd], [], [], 0)[0]:
        line = os.read(fd, 4096)
        if not line:
            typed += b"\x04"  # it ends the chat: what was typed after it stays queued
            break
        typed += line
    return typed


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
    hold.wanted = hold.own
    _set(hold, hold.own)
    try:
        while select.select([hold.fd], [], [], 0)[0]:
            chunk = os.read(hold.fd, 4096)
            if not chunk:
                break
            hold.pending += chunk
        yield
    finally:
        hold.wanted = hold.held
        _set(hold, hold.held)


@contextlib.contextmanager
def prompt_reads() -> Iterator[None]:
    """prompt_toolkit's prompt is reading: it sets its raw mode and puts back the mode it found,
    so a SIGCONT sets nothing meanwhile; a no-op outside `hold_keys`."""
    if not _holds:
        yield
        return
    hold = _holds[-1]
    hold.wanted = None
    try:
        yield
    finally:
        hold.wanted = hold.held
        # A stop just before the prompt set its raw mode made it find, and put back, the shell's
        # cooked mode: the hold again, whatever the prompt left.
        _set(hold, hold.held)


def take_pending() -> bytes:
    """The keys `line_mode` set aside, once: the next prompt's first input."""
    if not _holds:
        return b""
    pending = bytes(_holds[-1].pending)
    _holds[-1].pending.clear()
    return pending


@contextlib.contextmanager
def _set_again_when_continued() -> Iterator[None]:
    """The chat's mode set again on SIGCONT (after Ctrl-Z and `fg`), the handler before put back
    after the block. Python lets only the main thread set handlers; elsewhere nothing is set."""
    sigcont = getattr(signal, "SIGCONT", None)  # Windows has none
    if sigcont is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(sigcont, _continued)
    try:
        yield
    finally:
        # None: a handler not set from Python, which cannot be put back; the default is what
        # SIGCONT has unless someone embeds us
        signal.signal(sigcont, signal.SIG_DFL if before is None else before)


def _continued(signum: int, frame: FrameType | None) -> None:
    for hold in _holds:
        if hold.wanted is not None and not _in_background(hold.fd):
            _set(hold, hold.wanted)


def _in_background(fd: int) -> bool:
    """`bg` continues too, and a background process setting the mode would be stopped (SIGTTOU);
    the `fg` that comes later sends its own SIGCONT."""
    try:
        return os.tcgetpgrp(fd) != os.getpgrp()
    except OSError:  # not our controlling terminal: setting its mode stops nobody
        return False


def _own_mode(termios: ModuleType) -> list[Any] | None:
    """stdin's terminal attributes; None off a terminal."""
    if not sys.stdin.isatty():
        return None
    try:
        return list(termios.tcgetattr(sys.stdin.fileno()))
    except termios.error:
        return None


def _termios() -> ModuleType | None:
    # imported here, not at the top: Windows has none, and `run` imports this module through
    # approval.py
    try:
        import termios
    except ImportError:
        return None
    return termios


def _set(hold: _Hold, attributes: list[Any]) -> None:
    import termios  # imported already by the hold_keys that made `hold`

    with contextlib.suppress(termios.error):  # the terminal may be gone (a closed window)
        termios.tcsetattr(hold.fd, termios.TCSANOW, attributes)
