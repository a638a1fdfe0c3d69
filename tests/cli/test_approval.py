"""Terminal prompts (cli/approval.py) and the CLI's tool flags: --tools, --read-only, --yes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest

from loopwright.builtin import default_tools
from loopwright.cli.approval import TerminalApproval, TerminalClarify, terminal_prompts
from loopwright.testing import FakeModelServer, Reply, call

BUILTIN = {t.name for t in default_tools()}


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[tuple[TextIO, TextIO, Path]]:
    """(what the prompt reads, where the user 'types', the file the prompt is written to)."""
    read_fd, write_fd = os.pipe()
    reader, writer = os.fdopen(read_fd, "r"), os.fdopen(write_fd, "w")
    shown = tmp_path / "stderr.txt"
    try:
        yield reader, writer, shown
    finally:
        reader.close()
        writer.close()


@pytest.mark.parametrize("typed,expected", [("y\n", True), ("yes\n", True), ("a\n", "always"),
                                            ("n\n", False), ("\n", False), ("", False)])
async def test_the_approval_prompt_maps_answers(terminal: tuple[TextIO, TextIO, Path],
                                                typed: str, expected: Any) -> None:
    reader, writer, shown = terminal
    with shown.open("w") as out:
        prompt = TerminalApproval(stdin=reader, out=out)
        pending = asyncio.ensure_future(prompt("bash: recursive delete", "rm -rf build"))
        await asyncio.sleep(0)
        writer.write(typed)
        writer.flush()
        if not typed:
            writer.close()  # end of input
        assert await asyncio.wait_for(pending, 10) == expected
    text = shown.read_text()
    assert "approval needed: bash: recursive delete" in text and "rm -rf build" in text
    assert "[a]lways" in text


async def test_the_clarify_prompt_lists_options_and_takes_a_number(
        terminal: tuple[TextIO, TextIO, Path]) -> None:
    reader, writer, shown = terminal
    with shown.open("w") as out:
        prompt = TerminalClarify(stdin=reader, out=out)
        pending = asyncio.ensure_future(prompt("Which DB?", ["sqlite", "postgres"]))
        writer.write("2\n")
        writer.flush()
        assert await asyncio.wait_for(pending, 10) == "postgres"
    assert "? Which DB?\n    1. sqlite\n    2. postgres\n" in shown.read_text()


async def test_a_waiting_prompt_is_cancellable(terminal: tuple[TextIO, TextIO, Path]) -> None:
    reader, _, shown = terminal
    with shown.open("w") as out:
        pending = asyncio.ensure_future(TerminalApproval(stdin=reader, out=out)("a", "b"))
        await asyncio.sleep(0)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending


def test_no_prompts_off_a_terminal() -> None:
    assert not sys.stdin.isatty()  # pytest runs without a terminal on stdin
    assert terminal_prompts() == {}


# --- the CLI flags, in a subprocess (stdin is not a terminal: approvals fail closed) ---


def run_cli(server: FakeModelServer, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("LOOPWRIGHT_", "XDG_", "OPENAI", "ANTHROPIC", "OPENROUTER"))}
    env["HOME"] = str(cwd)
    return subprocess.run(
        [sys.executable, "-m", "loopwright", "run", "go", "--json", "--model", "fake-model",
         "--base-url", server.base_url, "--workdir", str(cwd), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def offered(server: FakeModelServer) -> set[str]:
    body = server.model_requests[0].body
    assert body is not None
    return {spec["function"]["name"] for spec in body.get("tools", [])} & BUILTIN


def tool_results(stdout: str) -> list[str]:
    events = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [e["content"] for e in events if e["type"] == "tool_result"]


@pytest.mark.parametrize("flags,expected", [
    ((), BUILTIN),
    (("--tools", "read_file,grep"), {"read_file", "grep"}),
    (("--read-only",), {"read_file", "list_dir", "glob", "grep", "todo", "web_fetch",
                        "clarify"}),
])
def test_tool_flags_choose_the_builtin_tools(tmp_path: Path, flags: tuple[str, ...],
                                             expected: set[str]) -> None:
    with FakeModelServer(replies=[Reply(text="ok")]) as server:
        completed = run_cli(server, tmp_path, *flags)
        assert completed.returncode == 0, completed.stderr
        assert offered(server) == expected


def test_an_unknown_tool_name_is_a_usage_error(tmp_path: Path) -> None:
    with FakeModelServer(replies=[]) as server:  # refused before any request
        completed = run_cli(server, tmp_path, "--tools", "read_file,nope")
    assert completed.returncode == 2 and "nope" in completed.stderr


def test_dangerous_commands_need_yes_when_nobody_can_be_asked(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    script = [Reply(tool_calls=[call("bash", {"command": "rm -rf build && echo removed"})]),
              Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        denied = run_cli(server, tmp_path)
    assert "denied" in tool_results(denied.stdout)[0] and (tmp_path / "build").exists()
    with FakeModelServer(replies=script) as server:
        approved = run_cli(server, tmp_path, "--yes")
    assert tool_results(approved.stdout) == ["removed\n[exit code 0]"]
    assert not (tmp_path / "build").exists()


DIFF_DETAIL = ("write loopwright.toml (it is a loopwright configuration file)\n"
               "--- a/loopwright.toml\n+++ b/loopwright.toml\n@@ -1 +1 @@\n"
               "-approve_all = false\n+approve_all = true\x1b[2J")


async def test_a_proposed_diff_is_plain_off_a_terminal_and_escaped(
        terminal: tuple[TextIO, TextIO, Path]) -> None:
    reader, writer, shown = terminal
    with shown.open("w") as out:  # a file, as stderr redirected or piped
        pending = asyncio.ensure_future(
            TerminalApproval(stdin=reader, out=out)("write_protected", DIFF_DETAIL))
        writer.write("n\n")
        writer.flush()
        assert await asyncio.wait_for(pending, 10) is False
    text = shown.read_text()
    assert "\x1b" not in text  # no colour to a file, and the model's escape is shown escaped
    assert ("    --- a/loopwright.toml\n    +++ b/loopwright.toml\n    @@ -1 +1 @@\n"
            "    -approve_all = false\n    +approve_all = true\\x1b[2J\n  Allow?") in text


def test_diff_lines_are_coloured_only_when_asked_and_a_long_diff_is_counted() -> None:
    from loopwright.cli.approval import MAX_DIFF_LINES, show_detail

    coloured = show_detail(DIFF_DETAIL, colour=True).splitlines()
    assert coloured[0] == "write loopwright.toml (it is a loopwright configuration file)"
    assert coloured[4] == "\x1b[31m-approve_all = false\x1b[0m"
    assert coloured[5] == "\x1b[32m+approve_all = true\\x1b[2J\x1b[0m"
    long = "--- a/x\n+++ b/x\n@@ -0,0 +1,300 @@\n" + "".join(f"+{n}\n" for n in range(300))
    lines = show_detail(long.rstrip("\n"), colour=False).splitlines()
    assert len(lines) == MAX_DIFF_LINES + 1
    assert lines[-1] == f"… {303 - MAX_DIFF_LINES} more lines of the change not shown"
