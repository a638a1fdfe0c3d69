"""Terminal output is inert (issue 29 item 7): escape sequences in what the model, a tool or a file
wrote are shown, never obeyed, wherever the CLI prints them; loopwright's own styling stays."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.cli.approval import show_detail
from loopwright.cli.inert import InertConsole, inert
from loopwright.cli.render import TerminalRenderer
from loopwright.events import StatusEvent, TextDelta, ToolCallEvent, ToolResultEvent
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import cli_env

CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x07"  # OSC 52: writes "rm -rf ~" to the clipboard
HIDDEN_LINK = "\x1b]8;;http://evil.example/\x1b\\the docs\x1b]8;;\x1b\\"  # OSC 8
HOSTILE = f"Done.{CLIPBOARD} See {HIDDEN_LINK}.\x1b[2J\x9b31m"


def terminal(width: int = 80) -> tuple[TerminalRenderer, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    console = InertConsole(file=err, force_terminal=True, width=width, color_system="standard",
                           highlight=False)
    answer_console = InertConsole(file=out, force_terminal=True, width=width,
                                  color_system="standard", highlight=False)
    shown = TerminalRenderer(out=out, err=console, markdown=True)
    shown.answer.console = answer_console
    return shown, out, err


def obeyed(text: str) -> list[str]:
    """The hostile sequences of `HOSTILE` a terminal would act on (loopwright's own colours and
    cursor moves of its live region are other sequences)."""
    return re.findall(r"\x1b\][^\x07\x1b]*|\x1b\[2J|\x9b", text)


def run_against(server: FakeModelServer, prompt: str, *, cwd: Path
                ) -> subprocess.CompletedProcess[str]:
    """`loopwright run PROMPT` with stdout and stderr piped."""
    return subprocess.run(
        [sys.executable, "-m", "loopwright", "run", prompt, "--model", "fake-model",
         "--base-url", server.base_url], cwd=cwd, env=cli_env(cwd), capture_output=True,
        text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_a_piped_answer_shows_osc_52_and_osc_8_as_text(tmp_path: Path) -> None:
    with FakeModelServer([Reply(HOSTILE, chunk_size=3)]) as server:
        proc = run_against(server, "Summarise", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x9b" not in proc.stdout
    assert "\\x1b]52;c;cm0gLXJmIH4K\\x07" in proc.stdout  # shown, readable, inert
    assert "http://evil.example/" in proc.stdout  # the hidden link's target is in plain sight
    assert "\x1b" not in proc.stderr


def test_a_rendered_answer_keeps_its_styling_but_not_the_models_sequences() -> None:
    shown, out, _ = terminal()
    shown(TextDelta(text="**Bold** and " + HOSTILE))
    shown.finish()
    rendered = out.getvalue()
    assert obeyed(rendered) == []
    assert "\x1b[1m" in rendered  # the Markdown bold is loopwright's own styling
    assert "\\x1b]52;c;" in rendered and "\\x9b31m" in rendered


def test_tool_output_notes_and_diffs_are_inert() -> None:
    shown, _, err = terminal()
    shown(ToolCallEvent(id="1", name="bash", arguments={"command": "cat x\x1b]52;c;AA\x07"}))
    shown(ToolResultEvent(id="1", name="bash", content=HOSTILE, is_error=True, duration=0.1))
    shown(StatusEvent(kind="note", message="from a server " + HIDDEN_LINK))
    diff = f"--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-old\n+{CLIPBOARD}new\n"
    shown(StatusEvent(kind="turn_diff", message="turn changed 1 file", data={"diff": diff}))
    shown.finish()
    printed = err.getvalue()
    assert obeyed(printed) == []
    assert "\\x1b]52" in printed and "the docs" in printed
    assert "\x1b[3" in printed  # colours (the red error line, the diff) are still there


@pytest.mark.parametrize("kept", ["tab\there", "family 👨\u200d👩\u200d👧", "naïve 中文",
                                  "line one\nline two"])
def test_text_without_escapes_is_printed_unchanged(kept: str) -> None:
    assert inert(kept) == kept


def test_crlf_line_ends_are_plain_line_ends() -> None:
    assert inert("one\r\ntwo\rthree") == "one\ntwothree"


def test_an_approval_shows_every_line_of_a_command_padded_with_newlines() -> None:
    shown = show_detail("rm -rf ./victim #" + "\n" * 60 + "ls -la", colour=False)
    assert shown.splitlines() == ["rm -rf ./victim #", "⟨59 empty lines⟩", "ls -la",
                                  "(61 lines)"]


def test_an_approval_shows_a_long_run_of_spaces_as_its_count() -> None:
    shown = show_detail("rm -rf ./victim #" + " " * 400 + "ls -la", colour=False)
    assert shown == "rm -rf ./victim #⟨400 spaces⟩ls -la"


@pytest.mark.parametrize("plain", ["rm -rf ./build", "cd src && make\nmake test",
                                   "printf 'a  b'\n\necho done"])
def test_an_ordinary_command_is_shown_as_written(plain: str) -> None:
    lines = plain.split("\n")
    expected = lines + ([f"({len(lines)} lines)"] if len(lines) > 1 else [])
    assert show_detail(plain, colour=False).split("\n") == expected


def test_an_edit_with_a_diff_keeps_the_diff_whole() -> None:
    detail = "edit a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n a\n-\n+b\n \n"
    assert show_detail(detail, colour=False) == detail


def test_a_tool_call_line_in_a_run_is_inert(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("read_file", {"path": f"x{CLIPBOARD}.txt"})]),
              Reply("ok")]
    with FakeModelServer(script) as server:
        proc = run_against(server, "Read it", cwd=tmp_path)
    assert "\x1b" not in proc.stderr and "\x1b" not in proc.stdout
