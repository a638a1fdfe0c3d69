"""The terminal renderer: what a person sees on stderr for notes, tool calls and results."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console

from loopwright import Agent, ToolContext, tool
from loopwright.builtin import default_tools
from loopwright.cli.render import TerminalRenderer
from loopwright.events import ToolResultEvent
from loopwright.testing import FakeModelServer, Reply, call

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


class SlowHuman:
    """An approval callback that reads the prompt and thinks, and keeps how long it took: a
    tool's time that counted the wait could not be shorter than that."""

    def __init__(self) -> None:
        self.waited = 0.0

    async def __call__(self, action: str, detail: str) -> bool:
        started = time.monotonic()
        await asyncio.sleep(0.6)
        self.waited += time.monotonic() - started
        return True


def test_tool_time_leaves_out_the_wait_for_the_users_approval() -> None:
    @tool
    async def deploy(target: str, ctx: ToolContext) -> str:
        """Deploy to a target (asks first)."""
        allowed = await ctx.approve("deploy", target)
        return "deployed" if allowed else "not deployed"

    slow_human = SlowHuman()
    results: list[ToolResultEvent] = []
    script = [Reply(tool_calls=[call("deploy", {"target": "prod"})]), Reply("Done.")]
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, tools=[deploy], approval=slow_human,
                      callbacks=[lambda e: results.append(e) if e.type == "tool_result" else None])
        assert agent.chat("Deploy") == "Done."
    (result,) = results
    assert result.content == "deployed"
    assert result.duration < slow_human.waited  # the approval wait counted as tool time


def terminal_renderer(width: int = 60) -> tuple[TerminalRenderer, io.StringIO]:
    err = io.StringIO()
    console = Console(file=err, force_terminal=True, width=width, color_system=None,
                      highlight=False)
    shown = TerminalRenderer(out=io.StringIO(), err=console, markdown=False)
    shown.activity.live_enabled = False  # finished lines only: what stays on the screen
    return shown, err


def test_a_terminal_shows_one_line_per_tool_call_a_usage_line_per_turn_and_a_summary() -> None:
    from loopwright.events import DoneEvent, ToolCallEvent, ToolResultEvent, TurnEnd, TurnStart
    from loopwright.messages import Usage
    from loopwright.result import RunResult

    shown, err = terminal_renderer()
    shown(TurnStart(turn=1))
    shown(ToolCallEvent(id="c1", name="bash", arguments='{"command": "ls -la\\u001b[2J"}'))
    shown(ToolResultEvent(id="c1", name="bash", content="a\nb\nc", duration=0.02))
    shown(TurnEnd(turn=1, usage={"input_tokens": 1234, "cache_read_tokens": 1000,
                                 "output_tokens": 56, "requests": 1}))
    usage = Usage(input_tokens=1234, cache_read_tokens=1000, output_tokens=56, requests=1)
    shown(DoneEvent(result=RunResult(output="", messages=[], stop_reason="completed", turns=1,
                                     usage=usage, cost=0.0123)))
    lines = err.getvalue().splitlines()
    assert lines[0] == "→ bash ls -la\\x1b[2J"  # the command, escaped: it cannot clear the screen
    assert lines[1] == "✓ bash ls -la\\x1b[2J · 0.02s · 3 lines"
    assert lines[2:5] == ["  │ a", "  │ b", "  │ c"]  # a command's first lines
    assert lines[5] == "turn 1 · 1,234 in (1,000 cached) · 56 out"
    assert lines[6].startswith("completed · 1 turn · ")
    assert lines[6].endswith("s · 1,234 in (1,000 cached) · 56 out · $0.0123")


def test_a_turn_diff_is_shown_whole() -> None:
    from loopwright.events import StatusEvent

    shown, err = terminal_renderer()
    diff = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-alpha\n+omega\n"
    shown(StatusEvent(kind="turn_diff", message="turn changed 1 file (+1/−1)",
                      data={"diff": diff, "files": ["notes.txt"]}))
    assert err.getvalue() == "turn changed 1 file (+1/−1)\n" + diff


def test_a_status_says_its_kind_once() -> None:
    from loopwright.events import StatusEvent

    shown, err = terminal_renderer(width=120)
    shown(StatusEvent(kind="compacting", message="compacting 3 earlier messages (~5,464 tokens)"))
    shown(StatusEvent(kind="memory_learned", message="memory learning failed: disk full"))
    shown(StatusEvent(kind="pruned", message="3 stale tool outputs replaced by stubs"))
    shown(StatusEvent(kind="recall", message="recalled matching messages from past sessions"))
    assert err.getvalue().splitlines() == [
        "compacting 3 earlier messages (~5,464 tokens)",  # was "compacting: compacting …"
        "memory learning failed: disk full",
        "pruned: 3 stale tool outputs replaced by stubs",  # a message that does not say it
        "recall: recalled matching messages from past sessions",
    ]


def test_a_retry_on_a_terminal_is_one_short_line_saying_what_happens_first() -> None:
    from loopwright.events import StatusEvent

    shown, err = terminal_renderer(width=50)
    body = "<html>" + "Service Unavailable " * 20 + "</html>"
    shown(StatusEvent(kind="retrying", message=f"m: HTTP 503: {body}; retrying in 0.50s",
                      data={"attempt": 1, "delay": 0.5, "status": 503}))
    assert err.getvalue().splitlines() == [
        "↻ retrying in 0.5s: m: HTTP 503: <html>Service Un…"]
    shown(StatusEvent(kind="fallback", message="m failed; continuing on b",  # Chinese: wide
                      data={"from": "m", "to": "b", "error": "服务器繁忙，请稍后重试" * 5}))
    shown(StatusEvent(kind="retrying", message="m: HTTP 503: 服务器繁忙，请稍后重试" * 5
                      + "; retrying in 1.00s", data={"attempt": 2, "delay": 1.0}))
    last = err.getvalue().splitlines()[-2:]
    assert last[0] == "↻ continuing on b: m failed"
    assert last[1].startswith("↻ retrying in 1.0s: m: HTTP 503: 服务器") and last[1].endswith("…")
    assert cell_len(last[1]) <= 50  # one line: was cut at 50 characters, 90 columns


def test_markdown_streams_rendered_and_code_blocks_stay_whole() -> None:
    from loopwright.cli.answer import AnswerStream, split_finished

    assert split_finished("a\n\n```\nx\n\ny\n") == ("a\n\n", "```\nx\n\ny\n")
    out = io.StringIO()
    console = Console(file=out, width=40, color_system=None, force_terminal=False)
    stream = AnswerStream(out, console=console, markdown=True)
    text = "# Title\n\nSome **bold** words.\n\n```python\nx = 1\n\ny = 2\n```\n\n- one\n- two\n"
    for start in range(0, len(text), 3):
        stream.write(text[start:start + 3])
    stream.end()
    shown = out.getvalue()
    for raw in ("#", "**", "```"):
        assert raw not in shown
    for seen in ("Title", "Some bold words.", "x = 1", "y = 2", "• one", "• two"):
        assert seen in shown


def test_a_policy_approval_wait_is_not_tool_time_either(tmp_path: Path) -> None:
    slow_human = SlowHuman()

    results: list[ToolResultEvent] = []
    script = [Reply(tool_calls=[call("edit_file", {"path": "deploy.yml", "old_string": "1",
                                                   "new_string": "2"})]), Reply("Done.")]
    (tmp_path / "deploy.yml").write_text("replicas: 1\n")
    with FakeModelServer(script) as server:
        agent = Agent("m", base_url=server.base_url, tools=default_tools(), approval=slow_human,
                      workdir=str(tmp_path), policy={"edit_file": {"ask": ["deploy"]}},
                      callbacks=[lambda e: results.append(e) if e.type == "tool_result" else None])
        assert agent.chat("Edit") == "Done."
    (result,) = results
    assert result.content.startswith("Edited deploy.yml")
    assert result.duration < slow_human.waited


def test_a_huge_diff_is_cut_with_a_count_and_where_to_see_it_whole() -> None:
    from loopwright.cli.render import MAX_DIFF_LINES
    from loopwright.events import StatusEvent

    shown, err = terminal_renderer(width=40)
    diff = "--- /dev/null\n+++ b/nums.txt\n@@ -0,0 +1,1000 @@\n" + "".join(
        f"+{n}\n" for n in range(1000))
    shown(StatusEvent(kind="turn_diff", message="turn changed 1 file (+1000/−0)",
                      data={"diff": diff, "files": ["nums.txt"]}))
    lines = err.getvalue().splitlines()
    assert lines[0] == "turn changed 1 file (+1000/−0)"
    assert lines[1:MAX_DIFF_LINES + 1] == diff.splitlines()[:MAX_DIFF_LINES]
    assert " ".join(lines[MAX_DIFF_LINES + 1:]) == (
        f"… {1003 - MAX_DIFF_LINES} more lines of this diff not shown (run --json prints it "
        "whole)")


def test_a_review_verdict_is_one_note() -> None:
    from loopwright.events import ReviewEvent

    shown, err = renderer(terminal=False, width=200)
    shown(ReviewEvent(check="narration", verdict="send_back", budget_left=1,
                      reason="the reply announced a tool call but made none"))
    assert err.getvalue() == ("review narration: send_back (the reply announced a tool call but "
                              "made none)\n")


def test_a_bell_in_reasoning_a_tool_name_or_a_diff_is_shown_not_dropped() -> None:
    from loopwright.events import ReasoningDelta, StatusEvent, ToolCallEvent, ToolResultEvent

    shown, err = terminal_renderer(width=200)
    shown.show_reasoning = True
    shown(ReasoningDelta(text="think \x1b]0;title\x07\n"))
    shown(ToolCallEvent(id="c1", name="nosuch\x07", arguments={}))
    shown(ToolResultEvent(id="c1", name="nosuch\x07", content="no such tool", is_error=True))
    shown(StatusEvent(kind="turn_diff", message="turn changed 1 file (+1/−1)",
                      data={"diff": "--- a/n\n+++ b/n\n@@ -1 +1 @@\n-a\n+b\x07\n"}))
    lines = err.getvalue().splitlines()
    assert lines[0] == "think \\x1b]0;title\\x07"  # the bell was dropped: "…]0;title"
    assert "→ nosuch\\x07" in lines and "✗ nosuch\\x07 · 0.00s · error" in lines
    assert lines[-1] == "+b\\x07"


def test_a_command_that_exits_non_zero_is_marked_failed_not_ticked() -> None:
    from loopwright.events import ToolCallEvent, ToolResultEvent

    shown, err = terminal_renderer(width=100)
    for n, output in enumerate(["built\n[exit code 0]", "no such file\n[exit code 2]"]):
        shown(ToolCallEvent(id=f"c{n}", name="bash", arguments={"command": "make"}))
        shown(ToolResultEvent(id=f"c{n}", name="bash", content=output, duration=0.01))
    outcomes = [line for line in err.getvalue().splitlines() if line[:1] in "✓✗"]
    assert outcomes == ["✓ bash make · 0.01s · 2 lines",
                        "✗ bash make · 0.01s · exit 2 · 2 lines"]  # was ✓: it ran, it failed
