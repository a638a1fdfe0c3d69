"""`chat`'s hold on the terminal (cli/typeahead.py), on a pseudo-terminal: keys typed while nothing
reads them stay bytes in the queue; a question switches the terminal's own mode back and sets the
queued keys aside for the next prompt."""

from __future__ import annotations

import array
import fcntl
import os
import signal
import sys
import termios
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

import pytest

from loopwright.cli import typeahead
from loopwright.cli.typeahead import hold_keys, line_mode, prompt_reads, release, take_pending


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


def _stopped_and_continued(stdin: TextIO, shell_mode: list[Any]) -> None:
    """What Ctrl-Z and `fg` do to the chat: the shell puts its mode on the terminal, then the
    chat gets a SIGCONT (its handler runs before the next line of Python)."""
    termios.tcsetattr(stdin.fileno(), termios.TCSANOW, shell_mode)
    os.kill(os.getpid(), signal.SIGCONT)


@pytest.mark.skipif(not hasattr(signal, "SIGCONT"), reason="no job control")
def test_a_sigcont_sets_the_held_mode_again_and_the_own_mode_inside_a_question(
        tty: tuple[TextIO, int]) -> None:
    stdin, main = tty
    own = termios.tcgetattr(stdin.fileno())
    before = signal.getsignal(signal.SIGCONT)
    with hold_keys():
        held = termios.tcgetattr(stdin.fileno())
        _stopped_and_continued(stdin, own)
        assert termios.tcgetattr(stdin.fileno()) == held
        _type(main, stdin, b"\x04")  # still a byte, not an end-of-file for no reader
        assert os.read(stdin.fileno(), 16) == b"\x04"
        with line_mode():
            _stopped_and_continued(stdin, held)
            assert termios.tcgetattr(stdin.fileno()) == own
        with prompt_reads():  # the prompt's raw mode is its own: left as it is
            _stopped_and_continued(stdin, own)
            assert termios.tcgetattr(stdin.fileno()) == own
        assert termios.tcgetattr(stdin.fileno()) == held  # and the hold again after the prompt
    assert signal.getsignal(signal.SIGCONT) == before
    assert termios.tcgetattr(stdin.fileno()) == own


def test_off_the_main_thread_the_hold_sets_no_signal_handler(tty: tuple[TextIO, int]) -> None:
    stdin, _ = tty
    failed: list[BaseException] = []

    def chat() -> None:
        try:
            with hold_keys():
                assert not _lflag(stdin) & termios.ICANON
        except BaseException as exc:  # reported on the test's thread
            failed.append(exc)

    worker = threading.Thread(target=chat)
    worker.start()
    worker.join()
    assert not failed


def test_without_termios_or_sigcont_nothing_breaks(tty: tuple[TextIO, int],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    stdin, _ = tty
    monkeypatch.delattr(signal, "SIGCONT", raising=False)
    with hold_keys():  # held, no handler
        assert not _lflag(stdin) & termios.ICANON
    monkeypatch.setattr(typeahead, "_termios", lambda: None)  # Windows
    with hold_keys(), line_mode(), prompt_reads():
        assert _lflag(stdin) & termios.ICANON
