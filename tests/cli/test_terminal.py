"""What `run` and `chat` print (issue 32 item 4): the answer alone on a piped stdout, a command's
first lines, errors whole, the resume hint after the error and only where it helps, one prefix
per error, a misspelt provider named, dim parser notes, a clean `--help`, `chat --json`, the
recap of a resumed session."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.cli.inert import InertConsole
from loopwright.cli.render import TerminalRenderer, without_repeats
from loopwright.config import check_model_prefix
from loopwright.errors import ConfigError
from loopwright.events import StatusEvent
from loopwright.testing import FakeModelServer, Fault, Reply, call
from shared_helpers import cli_env

THIRTY_LINES = "for i in $(seq 1 30); do echo line $i; done"


def loopwright(*args: str, cwd: Path, stdin: str = "", **env: str
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=cwd,
                          env=cli_env(cwd, **env), input=stdin, capture_output=True, text=True,
                          timeout=120)


def run_against(server: FakeModelServer, *args: str, cwd: Path, **env: str
                ) -> subprocess.CompletedProcess[str]:
    return loopwright("run", *args, "--model", "fake-model", "--base-url", server.base_url,
                      cwd=cwd, **env)


# --- stdout: the final answer ------------------------------------------------------------------


def test_a_piped_run_writes_only_the_final_answer_to_stdout(tmp_path: Path) -> None:
    script = [Reply("First I'll look.", tool_calls=[call("bash", {"command": "echo hi"})]),
              Reply("Now I'll check.", tool_calls=[call("bash", {"command": "echo ho"})]),
              Reply("The final answer.")]
    with FakeModelServer(script) as server:
        proc = run_against(server, "Do it", "--yes", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "The final answer.\n"
    assert "First I'll look." in proc.stderr and "Now I'll check." in proc.stderr
    assert proc.stderr.index("First I'll look.") < proc.stderr.index("→ bash echo hi")


def test_a_refusal_is_still_printed_on_stdout(tmp_path: Path) -> None:
    with FakeModelServer([Reply("I can't help with that.",
                                finish_reason="content_filter")]) as server:
        proc = run_against(server, "Something bad", cwd=tmp_path)
    assert proc.returncode == 7
    assert "I can't help with that." in proc.stdout


# --- tool output ---------------------------------------------------------------------------------


def test_the_first_lines_of_a_commands_output_are_shown_and_the_rest_counted(
        tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("bash", {"command": THIRTY_LINES})]), Reply("Done.")]
    with FakeModelServer(script) as server:
        proc = run_against(server, "Count", "--yes", cwd=tmp_path)
    lines = proc.stderr.splitlines()
    start = lines.index("  │ line 1")
    assert lines[start:start + 5] == ["  │ line 1", "  │ line 2", "  │ line 3", "  │ line 4",
                                      "  … 26 more lines (--verbose shows them)"]
    assert "[exit code 0]" not in proc.stderr  # the tick says so


@pytest.mark.parametrize("flag,shown", [("--output-lines=2", 2), ("--output-lines=0", 0),
                                        ("--verbose", 30)])
def test_how_much_output_is_shown_is_configurable(tmp_path: Path, flag: str, shown: int) -> None:
    script = [Reply(tool_calls=[call("bash", {"command": THIRTY_LINES})]), Reply("Done.")]
    with FakeModelServer(script) as server:
        proc = run_against(server, "Count", "--yes", flag, cwd=tmp_path)
    assert proc.stderr.count("  │ line ") == shown
    assert ("more lines" in proc.stderr) is (shown < 30)


def test_a_one_line_read_is_not_repeated_below_its_line(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    script = [Reply(tool_calls=[call("read_file", {"path": "a.txt"})]), Reply("Done.")]
    with FakeModelServer(script) as server:
        proc = run_against(server, "Read", cwd=tmp_path)
    assert "│" not in proc.stderr  # a file read is summed up, not printed


def test_a_long_tool_error_is_shown_whole_never_cut_mid_word(tmp_path: Path) -> None:
    words = " ".join(f"word{n}" for n in range(60))
    command = f"echo '{words}' >&2; exit 3"
    script = [Reply(tool_calls=[call("bash", {"command": command})]),
              Reply(tool_calls=[call("read_file", {"path": words[:200]})]), Reply("Done.")]
    with FakeModelServer(script) as server:
        proc = run_against(server, "Fail", "--yes", cwd=tmp_path)
    flat = " ".join(proc.stderr.split())
    error = flat[flat.index("✗ read_file"):]
    assert words[:200] in error  # the tool error, every word of it
    long_output = next(line for line in proc.stderr.splitlines() if line.startswith("  │ word0"))
    assert long_output.endswith("…") and long_output[:-1].split()[-1] in words.split()


# --- errors and the resume hint ------------------------------------------------------------------


def test_a_wrong_model_has_no_resume_hint(tmp_path: Path) -> None:
    missing = Fault.status(404, {"error": {"message": "The model `gpt-9` does not exist"}})
    with FakeModelServer([missing], strict=False) as server:
        proc = run_against(server, "Hi", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("loopwright: error: ")
    assert "--resume" not in proc.stderr


def test_a_provider_outage_says_the_error_then_how_to_resume(tmp_path: Path) -> None:
    with FakeModelServer([Fault.status(503)] * 2, strict=False) as server:
        proc = run_against(server, "Hi", cwd=tmp_path, LOOPWRIGHT_RETRY_ATTEMPTS="2",
                           LOOPWRIGHT_RETRY_BASE_DELAY="0.01")
    assert proc.returncode == 1
    error, hint = proc.stderr.strip().splitlines()[-2:]
    assert error.startswith("loopwright: error: ") and "503" in error
    assert hint.startswith("loopwright: session saved; continue with: loopwright run --resume ")
    assert error.count("fake-model (chat_completions)") == 1  # the prefix once, not per layer


@pytest.mark.parametrize("message,said", [
    ("custom m (chat_completions): gave up after 6 attempts: custom m (chat_completions): "
     "HTTP 500: Simulated HTTP 500",
     "custom m (chat_completions): gave up after 6 attempts: HTTP 500: Simulated HTTP 500"),
    ("error: error: boom", "error: boom"),
    ("HTTP 404: The model `x` does not exist", "HTTP 404: The model `x` does not exist"),
    ("a: b: a b", "a: b: a b"),
])
def test_an_error_says_each_part_once(message: str, said: str) -> None:
    assert without_repeats(message) == said


# --- the provider prefix -------------------------------------------------------------------------


def test_a_misspelt_provider_prefix_is_named_with_a_suggestion(tmp_path: Path) -> None:
    proc = loopwright("run", "Hi", "--model", "anthorpic:claude-sonnet-4-5", cwd=tmp_path)
    assert proc.returncode == 6
    flat = " ".join(proc.stderr.split())
    assert "unknown provider 'anthorpic'" in flat
    assert "did you mean anthropic:claude-sonnet-4-5?" in flat
    assert "OPENAI" not in flat


@pytest.mark.parametrize("model", ["opneai:gpt-4o", "olama:qwen", "openroutr:x/y"])
def test_near_spellings_of_providers_are_caught(model: str) -> None:
    with pytest.raises(ConfigError, match="did you mean"):
        check_model_prefix(model, None, named="--model")


@pytest.mark.parametrize("model,base_url", [
    ("llama3:8b", None), ("qwen2.5:7b", None), ("ollama:qwen2.5", None),
    ("anthropic:claude-x", None), ("gpt-4o", None), ("anthorpic:x", "http://127.0.0.1:1/v1"),
    ("mistral:7b-instruct", None)])
def test_model_tags_and_known_providers_are_left_alone(model: str, base_url: str | None) -> None:
    check_model_prefix(model, base_url, named="--model")


# --- notes and help -----------------------------------------------------------------------------


def test_a_parser_note_is_dim() -> None:
    err = io.StringIO()
    console = InertConsole(file=err, force_terminal=True, color_system="standard", width=100)
    shown = TerminalRenderer(out=io.StringIO(), err=console, verbose=True)
    shown(StatusEvent(kind="text_tool_calls", message="read 1 tool call(s) from the reply text"))
    assert err.getvalue().startswith("\x1b[2mtext_tool_calls: read 1 tool call(s)")


@pytest.mark.parametrize("command", [["run"], ["chat"], ["sessions", "list"], ["batch"], []])
def test_help_shows_no_bool_after_flags(tmp_path: Path, command: list[str]) -> None:
    proc = loopwright(*command, "--help", cwd=tmp_path, COLUMNS="120")
    assert proc.returncode == 0, proc.stderr
    assert "<bool>" not in proc.stdout
    assert "--help" in proc.stdout


def test_help_lists_the_output_flags(tmp_path: Path) -> None:
    flat = " ".join(loopwright("run", "--help", cwd=tmp_path, COLUMNS="120").stdout.split())
    assert "--output-lines" in flat and "--verbose" in flat


# --- chat --json and /expand ---------------------------------------------------------------------


def test_chat_json_reads_lines_and_prints_events(tmp_path: Path) -> None:
    with FakeModelServer([Reply("Hi one."), Reply("Hi two.")]) as server:
        proc = loopwright("chat", "--json", "--model", "fake-model", "--base-url",
                          server.base_url, cwd=tmp_path, stdin="hello\n/usage\nagain\n")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    done = [event["result"]["output"] for event in events if event["type"] == "done"]
    assert done == ["Hi one.", "Hi two."]
    assert "this conversation:" in proc.stderr  # notes stay off stdout


def test_chat_expand_prints_the_whole_output_of_the_last_calls(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("bash", {"command": THIRTY_LINES})]), Reply("Counted.")]
    with FakeModelServer(script) as server:
        proc = loopwright("chat", "--yes", "--model", "fake-model", "--base-url",
                          server.base_url, cwd=tmp_path, stdin="count\n/expand\n")
    assert proc.returncode == 0, proc.stderr
    assert "(/expand shows them)" in proc.stderr
    after = proc.stderr[proc.stderr.index("Counted") if "Counted" in proc.stderr else 0:]
    assert all(f"│ line {n}\n" in after for n in range(1, 31))


# --- resume --------------------------------------------------------------------------------------


def test_resuming_a_run_recalls_what_the_session_was_about(tmp_path: Path) -> None:
    with FakeModelServer([Reply("Paris is the capital."), Reply("About 2 million.")]) as server:
        first = run_against(server, "What is the capital of France?", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        second = loopwright("run", "--continue", "And its population?", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert second.stdout == "About 2 million.\n"
    lines = second.stderr.splitlines()
    recap = next(line for line in lines if line.startswith("resumed "))
    assert "What is the capital of France?" in recap and "2 messages" in recap
    assert "you: What is the capital of France?" in lines
    assert "model: Paris is the capital." in lines


def test_a_hostile_stored_message_is_inert_in_the_recap(tmp_path: Path) -> None:
    with FakeModelServer([Reply("ok\x1b]52;c;AAAA\x07"), Reply("fine")]) as server:
        run_against(server, "Hello", cwd=tmp_path)
        again = loopwright("run", "--continue", "more", cwd=tmp_path)
    assert "model: ok\\x1b]52;c;AAAA\\x07" in again.stderr and "\x1b" not in again.stderr

