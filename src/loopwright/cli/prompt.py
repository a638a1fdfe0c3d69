"""Reading what the person types in `chat`.

On a terminal: prompt_toolkit — Enter sends, Alt-Enter (or Esc then Enter) adds a newline, a
bracketed paste is one message however many lines it has, ↑/↓ walk the history kept across
sessions (`<data dir>/chat_history`), Tab completes slash commands. Off a terminal (a pipe,
a test) one line per message, as `input()` reads them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input.typeahead import store_typeahead
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyBindings, KeyPress

from loopwright.cli.options import CONVERT_TO_UTF8, NotUtf8, decode_utf8
from loopwright.cli.render import say
from loopwright.cli.typeahead import prompt_reads, take_pending

PROMPT = "› "
HISTORY_FILE = "chat_history"


class Interrupted(Exception):
    """Ctrl-C at the prompt: the line is dropped, the chat goes on."""


class LineInput:
    """One message per line of stdin (pipes and tests)."""

    interactive = False
    warning: str | None = None

    def __init__(self) -> None:
        self._read = 0  # lines, for the note on one that is not UTF-8

    async def read(self) -> str | None:
        """The next message, or None at end of input; a line that is not UTF-8 is skipped with
        a note (decoded by the locale it would reach the model and the store as garbage)."""
        piped = getattr(sys.stdin, "buffer", None)
        while piped is not None:
            raw = piped.readline()
            self._read += 1
            try:
                return decode_utf8(raw, f"line {self._read} of stdin") if raw else None
            except NotUtf8 as exc:
                say(f"{exc}: skipped; {CONVERT_TO_UTF8}")
        line = sys.stdin.readline()
        return line if line else None


class TerminalInput:
    """prompt_toolkit on a terminal: multi-line, paste, history, completion."""

    interactive = True

    def __init__(self, commands: dict[str, str], history_dir: Path | None) -> None:
        history: History = InMemoryHistory()
        self.warning: str | None = None
        if history_dir is not None:
            try:
                history_dir.mkdir(parents=True, exist_ok=True)
                path = history_dir / HISTORY_FILE
                path.touch()
                history = FileHistory(str(path))
            except OSError as exc:
                self.warning = (f"warning: no input history ({exc.strerror}: {history_dir}); "
                                "set LOOPWRIGHT_DATA_DIR to a writable directory")
        keys = KeyBindings()

        @keys.add("enter")
        def _send(event: Any) -> None:
            event.current_buffer.validate_and_handle()

        @keys.add("escape", "enter")
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        self.session: PromptSession[str] = PromptSession(
            history=history, completer=SlashCompleter(commands), multiline=True,
            key_bindings=keys, complete_while_typing=True, enable_history_search=False,
            prompt_continuation=lambda width, line, soft: "  ")

    async def read(self) -> str | None:
        pending = take_pending()  # keys typed before a question that came up during the run
        if pending:
            store_typeahead(self.session.input, _key_presses(pending))
        try:
            with prompt_reads():  # a SIGCONT meanwhile leaves the prompt's raw mode alone
                return await self.session.prompt_async(PROMPT)
        except EOFError:
            return None
        except KeyboardInterrupt:
            raise Interrupted from None


def _key_presses(typed: bytes) -> list[KeyPress]:
    keys: list[KeyPress] = []
    parser = Vt100Parser(keys.append)
    parser.feed(typed.decode("utf-8", "replace"))
    parser.flush()
    return keys


def make_input(commands: dict[str, str], history_dir: Path | None) -> LineInput | TerminalInput:
    if sys.stdin.isatty() and sys.stdout.isatty():
        return TerminalInput(commands, history_dir)
    return LineInput()


class SlashCompleter(Completer):
    """Completes `/…` at the start of the input with the commands and what they do."""

    def __init__(self, commands: dict[str, str]) -> None:
        self.commands = commands

    def get_completions(self, document: Document, complete_event: CompleteEvent
                        ) -> Iterable[Completion]:
        text = document.text_before_cursor
        if not text.startswith("/") or " " in text or "\n" in text:
            return
        for name, meaning in self.commands.items():
            if name.startswith(text):
                yield Completion(name, start_position=-len(text), display_meta=meaning)
