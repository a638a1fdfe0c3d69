"""`chat`'s hold on the terminal (cli/typeahead.py), on a pseudo-terminal: keys typed while nothing
reads them stay bytes in the queue; a question switches the terminal's own mode back and sets the
queued keys aside for the next prompt."""

from __future__ import annotations

import array
import fcntl
import os
import sys
import termios
import time
from collections.abc import Iterator
from typing import TextIO

import pytest

from loopwright.cli.typeahead import hold_keys, line_mode, release, take_pending


@pytest.fixture
def tty(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TextIO, int]]:
    """(stdin on a pseudo-terminal in canonical mode, the fd the "person" types into)."""
    main, child = os.openpty()
    stdin = os.fdopen(child, "r")
    monkeypatch.setattr(sys, "stdin", stdin)
    try:
        yield stdin, main
    finally:
        stdin.close()
        os.close(main)


def _lflag(stdin: TextIO) -> int:
    return int(termios.tcgetattr(stdin.fileno())[3])


def _type(main: int, stdin: TextIO, keys: bytes) -> None:
    """Type `keys` and wait until the line discipline has them queued (a pty hands bytes over
    asynchronously; a key typed seconds earlier is long queued)."""
    os.write(main, keys)
    queued = array.array("i", [0])
    deadline = time.monotonic() + 5
    while queued[0] < len(keys) and time.monotonic() < deadline:
        fcntl.ioctl(stdin.fileno(), termios.FIONREAD, queued)
        time.sleep(0.001)
    assert queued[0] == len(keys)


def test_the_hold_is_non_canonical_without_echo_and_ctrl_c_still_a_signal(
        tty: tuple[TextIO, int]) -> None:
    stdin, main = tty
    own = termios.tcgetattr(stdin.fileno())
    with hold_keys():
        lflag = _lflag(stdin)
        assert not lflag & (termios.ICANON | termios.ECHO)
        assert lflag & termios.ISIG
        _type(main, stdin, b"\x04")  # Ctrl-D with no reader: a byte, not an end-of-file
        assert os.read(stdin.fileno(), 16) == b"\x04"
    assert termios.tcgetattr(stdin.fileno()) == own


def test_a_question_gets_the_own_mode_and_no_keys_typed_before_it(
        tty: tuple[TextIO, int]) -> None:
    stdin, main = tty
    with hold_keys():
        _type(main, stdin, b"y\r\x04")  # typed ahead, before any question was shown
        with line_mode():
            assert _lflag(stdin) & termios.ICANON
            os.write(main, b"n\n")
            assert stdin.readline() == "n\n"  # the answer typed after the question, alone
        assert not _lflag(stdin) & termios.ICANON
        assert take_pending() == b"y\r\x04"  # for the next prompt, once
        assert take_pending() == b""


def test_release_gives_the_terminal_back_for_a_hard_exit(tty: tuple[TextIO, int]) -> None:
    stdin, _ = tty
    own = termios.tcgetattr(stdin.fileno())
    with hold_keys():
        release()
        assert termios.tcgetattr(stdin.fileno()) == own


def test_off_a_terminal_nothing_is_held(tty: tuple[TextIO, int]) -> None:
    stdin, _ = tty
    with hold_keys(enabled=False):
        assert _lflag(stdin) & termios.ICANON
        with line_mode():
            pass
        assert take_pending() == b""
