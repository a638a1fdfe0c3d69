"""Ephemeral reminders (DESIGN §1 step 5): on the outgoing request only, never in history."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, LoopPlugin, ToolContext, tool
from loopwright.context.reminders import add_reminder, attach_note, note_file_read
from loopwright.endpoints.retry import RetryPolicy
from loopwright.messages import Message, ModelRequest, ToolCall, sanitize, tool_result
from loopwright.plugins import RunView
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


@tool(read_only=True)
def noop(n: int) -> str:
    """Do nothing."""
    return f"nothing {n}"


@tool
def flag(ctx: ToolContext) -> str:
    """Leave a note for the next request."""
    add_reminder(ctx, "REMEMBER-THE-FLAG")
    return "flagged"


@tool
def plan(ctx: ToolContext) -> str:
    """Write a todo list."""
    ctx.state["todos"] = [{"id": "1", "content": "write the report", "status": "in_progress"},
                          {"id": "2", "content": "old chore", "status": "done"}]
    return "planned"


def request_texts(server: FakeModelServer) -> list[str]:
    return [json.dumps(r.body["messages"]) for r in server.model_requests]


async def run_script(script: list[Any], tools: list[Any], tmp_path: Path,
                     **options: Any) -> tuple[FakeModelServer, Any]:
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=tools, retry=FAST,
                      cache_dir=str(tmp_path), workdir=str(tmp_path), **options)
        result = await agent.run("go")
    return server, result


async def test_a_file_changed_after_it_was_read_is_announced_once(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("v1")

    @tool(read_only=True)
    def read(ctx: ToolContext) -> str:
        """Read the notes."""
        note_file_read(ctx, target)
        return target.read_text()

    @tool
    def meanwhile() -> str:
        """Someone else edits the notes."""
        stamp = target.stat().st_mtime_ns
        target.write_text("v2")
        os.utime(target, ns=(stamp + 5_000_000_000, stamp + 5_000_000_000))
        return "ok"

    script = [Reply(tool_calls=[call("read")]), Reply(tool_calls=[call("meanwhile")]),
              Reply(tool_calls=[call("noop", {"n": 1})]), Reply(text="done")]
    server, result = await run_script(script, [read, meanwhile, noop], tmp_path)
    texts = request_texts(server)
    assert [("was modified after you last read it" in t) for t in texts] == [
        False, False, True, False]
    assert str(target) in texts[2]
    assert not any("was modified" in m.content for m in result.messages)  # never stored


async def test_a_note_added_by_a_tool_goes_out_once(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("flag")]), Reply(tool_calls=[call("noop", {"n": 1})]),
              Reply(text="done")]
    server, result = await run_script(script, [flag, noop], tmp_path)
    assert [t.count("REMEMBER-THE-FLAG") for t in request_texts(server)] == [0, 1, 0]
    assert result.stop_reason == "completed"


async def test_a_plugin_can_add_a_reminder_before_the_first_call(tmp_path: Path) -> None:
    class Greeter(LoopPlugin):
        async def on_run_start(self, run: RunView) -> None:
            add_reminder(run, "FIRST-NOTE")

    with FakeModelServer(replies=[Reply(text="ok")]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", plugins=[Greeter()],
                      retry=FAST, cache_dir=str(tmp_path))
        await agent.run("go")
    last = server.model_requests[0].body["messages"][-1]
    assert last["role"] == "user" and last["content"].startswith("go")
    assert "<system-reminder>\nFIRST-NOTE\n</system-reminder>" in last["content"]


async def test_quiet_open_todos_are_recalled_at_most_every_eight_turns(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("plan")]),
              *[Reply(tool_calls=[call("noop", {"n": n})]) for n in range(12)],
              Reply(text="done")]
    server, _ = await run_script(script, [plan, noop], tmp_path)
    hits = [n for n, text in enumerate(request_texts(server)) if "write the report" in text
            and "todo list has open items" in text]
    assert hits == [9]  # the list changed on turn 2's view, then 8 quiet turns
    assert "old chore" not in request_texts(server)[9]


async def test_a_tools_note_comes_before_a_changed_files_in_one_reminder(
        tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("v1")

    @tool
    def read_then_flag(ctx: ToolContext) -> str:
        """Read the notes, then someone edits them; leave a note too."""
        note_file_read(ctx, target)
        stamp = target.stat().st_mtime_ns
        target.write_text("v2")
        os.utime(target, ns=(stamp + 5_000_000_000, stamp + 5_000_000_000))
        add_reminder(ctx, "REMEMBER-THE-FLAG")
        return "ok"

    script = [Reply(tool_calls=[call("read_then_flag")]), Reply(text="done")]
    server, _ = await run_script(script, [read_then_flag], tmp_path)
    second = json.dumps(server.model_requests[1].body["messages"][-1])
    assert second.count("<system-reminder>") == 1
    assert 0 <= second.index("REMEMBER-THE-FLAG") < second.index("was modified after you")


async def test_an_emptied_todo_list_is_never_recalled(tmp_path: Path) -> None:
    @tool
    def clear(ctx: ToolContext) -> str:
        """Empty the todo list."""
        ctx.state["todos"] = []
        return "cleared"

    script = [Reply(tool_calls=[call("plan")]), Reply(tool_calls=[call("clear")]),
              *[Reply(tool_calls=[call("noop", {"n": n})]) for n in range(12)],
              Reply(text="done")]
    server, _ = await run_script(script, [plan, clear, noop], tmp_path)
    assert not any("todo list has open items" in text for text in request_texts(server))


async def test_reminders_can_be_switched_off(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("flag")]), Reply(text="done")]
    server, _ = await run_script(script, [flag], tmp_path, reminders=False)
    assert not any("REMEMBER-THE-FLAG" in t for t in request_texts(server))


@pytest.mark.parametrize("mode", ["anthropic_messages", "responses", "chat_completions"])
async def test_a_note_after_tool_results_keeps_every_wire_format_valid(
        tmp_path: Path, mode: str) -> None:
    script = [Reply(tool_calls=[call("flag")]), Reply(text="done")]
    server, result = await run_script(script, [flag], tmp_path, api_mode=mode)
    assert result.stop_reason == "completed"
    body = server.model_requests[1].body
    if mode == "anthropic_messages":
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["user", "assistant", "user"]
        kinds = [block["type"] for block in body["messages"][-1]["content"]]
        assert kinds == ["tool_result", "text"]  # results first, then the note, one turn
    assert "REMEMBER-THE-FLAG" in json.dumps(body)


def test_attaching_merges_into_a_trailing_user_message_without_touching_history() -> None:
    history = [Message(role="system", content="s"), Message(role="user", content="task")]
    request = ModelRequest(model="m", messages=sanitize(history))
    attach_note(request, "NOTE")
    assert [m.role for m in request.messages] == ["system", "user"]
    merged = request.messages[-1].content
    assert merged.startswith("task") and "NOTE" in merged
    assert history[-1].content == "task"
    call_ = ToolCall(id="c1", name="x")
    after_tool = [*history, Message(role="assistant", tool_calls=[call_]), tool_result(call_, "r")]
    request = ModelRequest(model="m", messages=sanitize(after_tool))
    attach_note(request, "NOTE")
    assert [m.role for m in sanitize(request.messages)] == [m.role for m in request.messages]
