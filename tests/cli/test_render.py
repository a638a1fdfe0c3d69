"""The terminal renderer: what a person sees on stderr for notes, tool calls and results."""

from __future__ import annotations

import io

from rich.console import Console

from loopwright.cli.render import TerminalRenderer

FIX = "pass --model and --base-url (e.g. --base-url http://127.0.0.1:11434/v1 --model qwen2.5)"
LONG_NOTE = "no model provider found. Looked for LOOPWRIGHT_BASE_URL, OPENAI_API_KEY, " \
            "OPENROUTER_API_KEY and ANTHROPIC_API_KEY in the environment, and for local " \
            "servers (ollama 11434, lmstudio 1234, llamacpp 8080, vllm 8000). " + FIX


def renderer(*, terminal: bool, width: int) -> tuple[TerminalRenderer, io.StringIO]:
    err = io.StringIO()
    console = Console(file=err, force_terminal=terminal, width=width, color_system=None,
                      highlight=False)
    return TerminalRenderer(out=io.StringIO(), err=console), err


def test_a_long_note_wraps_to_a_40_column_terminal_and_keeps_the_fix() -> None:
    shown, err = renderer(terminal=True, width=40)
    shown.note(LONG_NOTE)
    lines = err.getvalue().splitlines()
    assert len(lines) > 5
    assert all(len(line) <= 40 for line in lines)
    assert " ".join(" ".join(lines).split()) == LONG_NOTE


def test_a_long_note_to_a_pipe_is_one_whole_line() -> None:
    shown, err = renderer(terminal=False, width=80)
    shown.note(LONG_NOTE)
    assert err.getvalue() == LONG_NOTE + "\n"
