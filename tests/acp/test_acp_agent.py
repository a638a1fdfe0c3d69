"""`loopwright acp` driven by the official ACP SDK's client side, as a subprocess, against the
fake model server: a session that reads a file, edits it with a diff, asks permission (allowed
once, then rejected), is cancelled mid-tool and is loaded again; the editor's buffers; bad input."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from acp import RequestError, text_block
from editor_client import EditorClient, acp_agent, text_of

from loopwright.testing import FakeModelServer, Fault, Reply, call
from shared_helpers import REFUSED_URL


async def test_read_edit_permission_cancel_and_load(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello world\n")
    script = [
        Reply(tool_calls=[call("read_file", {"path": "notes.txt"})]),
        Reply(tool_calls=[call("edit_file", {"path": "notes.txt", "old_string": "hello",
                                             "new_string": "bye"})]),
        Reply("Changed hello to bye."),
        Reply(tool_calls=[call("edit_file", {"path": "notes.txt", "old_string": "bye",
                                             "new_string": "ciao"})]),
        Reply("The edit was rejected."),
        Reply(tool_calls=[call("bash", {"command": "sleep 30"})]),
        Reply("Still here after the cancel."),
    ]
    client = EditorClient(answers=["allow", "reject"])
    with FakeModelServer(script) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            done = await conn.prompt(session_id=session,
                                     prompt=[text_block("Change hello to bye in notes.txt")])
            assert done.stop_reason == "end_turn"
            assert (workspace / "notes.txt").read_text() == "bye world\n"
            starts = client.of("tool_call")
            assert [(s.kind, s.status) for s in starts] == [("read", "pending"),
                                                            ("edit", "pending")]
            assert starts[0].locations[0].path == str((workspace / "notes.txt").resolve())
            diff = starts[1].content[0]
            assert (diff.type, diff.old_text, diff.new_text) == ("diff", "hello world\n",
                                                                 "bye world\n")
            question, options = client.questions[0]
            assert question.tool_call_id == starts[1].tool_call_id
            assert {o.kind for o in options} == {"allow_once", "allow_always", "reject_once"}
            assert "Changed hello to bye." in text_of(client)
            finished = client.of("tool_call_update")
            assert [u.status for u in finished] == ["completed", "completed"]
            assert "hello world" in finished[0].raw_output

            client.updates.clear()
            await conn.prompt(session_id=session, prompt=[text_block("Now make it ciao")])
            assert (workspace / "notes.txt").read_text() == "bye world\n"  # rejected
            assert len(client.questions) == 2
            assert [u.status for u in client.of("tool_call_update")] == ["failed"]

            client.updates.clear()
            turn = asyncio.ensure_future(conn.prompt(session_id=session,
                                                     prompt=[text_block("Wait a while")]))
            await client.wait_for(lambda: client.of("tool_call"), "the bash call")
            with pytest.raises(RequestError) as busy:
                await conn.prompt(session_id=session, prompt=[text_block("again")])
            assert "already running" in str(busy.value.data)
            await conn.cancel(session_id=session)
            async with asyncio.timeout(10):  # the 30 s command does not hold the turn
                cancelled = await turn
            assert cancelled.stop_reason == "cancelled"
            assert client.of("tool_call")[0].kind == "execute"

        replayed = EditorClient()
        async with acp_agent(replayed, server, tmp_path) as conn:
            await conn.load_session(cwd=str(workspace), session_id=session, mcp_servers=[])
            users = [u.content.text for u in replayed.of("user_message_chunk")]
            assert users[:2] == ["Change hello to bye in notes.txt", "Now make it ciao"]
            assert "Changed hello to bye." in text_of(replayed)
            assert [s.kind for s in replayed.of("tool_call")] == ["read", "edit", "edit",
                                                                  "execute"]
            assert replayed.of("available_commands_update")
            replayed.updates.clear()
            again = await conn.prompt(session_id=session, prompt=[text_block("Are you there?")])
            assert again.stop_reason == "end_turn"
            assert text_of(replayed) == "Still here after the cancel."
        history = server.model_requests[-1].body["messages"]
        assert any("sleep 30" in str(m) for m in history)  # the resumed session kept its turns


async def test_editor_buffers_are_read_and_written_through(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    notes = workspace / "notes.txt"
    notes.write_text("saved text\n")
    buffers = {str(notes.resolve()): "unsaved text\n"}
    script = [
        Reply(tool_calls=[call("read_file", {"path": "notes.txt"})]),
        Reply(tool_calls=[call("write_file", {"path": "notes.txt", "content": "one\n"})]),
        Reply(tool_calls=[call("write_file", {"path": "notes.txt", "content": "two\n"})]),
        Reply("Wrote it twice."),
    ]
    client = EditorClient(answers=["always"], buffers=buffers)
    with FakeModelServer(script) as server:
        async with acp_agent(client, server, tmp_path, fs=True) as conn:
            session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("Rewrite notes.txt")])
    read_result = client.of("tool_call_update")[0].raw_output
    assert "unsaved text" in read_result and "saved text" not in read_result.replace(
        "unsaved text", "")
    assert client.writes == [(str(notes.resolve()), "one\n"), (str(notes.resolve()), "two\n")]
    assert notes.read_text() == "saved text\n"  # the editor owns the buffer; it saves it
    assert len(client.questions) == 1  # "allow always" covered the second write
    edit = client.of("tool_call")[1].content[0]
    assert (edit.old_text, edit.new_text) == ("unsaved text\n", "one\n")


async def test_bad_client_input_gets_errors_naming_what_was_wrong(tmp_path: Path) -> None:
    client = EditorClient()
    with FakeModelServer([]) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            with pytest.raises(RequestError) as unknown:
                await conn.prompt(session_id="nope", prompt=[text_block("hi")])
            assert unknown.value.code == -32602 and "unknown session" in str(unknown.value.data)
            with pytest.raises(RequestError) as relative:
                await conn.new_session(cwd="relative/dir", mcp_servers=[])
            assert "absolute directory" in str(relative.value.data)
            with pytest.raises(RequestError) as missing:
                await conn.load_session(cwd=str(tmp_path), session_id="0" * 32, mcp_servers=[])
            assert "no stored session" in str(missing.value.data)
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            with pytest.raises(RequestError) as malformed:
                await conn._conn.send_request("session/prompt", {"sessionId": session,
                                                                 "prompt": "not a list"})
            assert malformed.value.code == -32602
            with pytest.raises(RequestError) as empty:
                await conn.prompt(session_id=session, prompt=[text_block("  ")])
            assert "empty" in str(empty.value.data)


async def test_unanswered_permission_fails_closed(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    workspace.mkdir()
    script = [Reply(tool_calls=[call("write_file", {"path": "a.txt", "content": "x"})]),
              Reply("It was not allowed.")]
    client = EditorClient(answers=[])  # the editor cancels the question
    with FakeModelServer(script) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("write a.txt")])
    assert not (workspace / "a.txt").exists()
    assert [u.status for u in client.of("tool_call_update")] == ["failed"]


async def test_slash_commands_are_advertised_and_answered(tmp_path: Path) -> None:
    client = EditorClient()
    with FakeModelServer([]) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await client.wait_for(lambda: client.of("available_commands_update"), "commands")
            names = {c.name for c in client.of("available_commands_update")[0].available_commands}
            assert names == {"tools", "usage", "model"}
            await conn.prompt(session_id=session, prompt=[text_block("/tools")])
            assert "read_file" in text_of(client)
    assert server.model_requests == []  # answered without the model


async def test_nothing_the_client_or_the_project_sends_loosens_safety(tmp_path: Path) -> None:
    """A client's `mcpServers` are not started; an untrusted project's `approve_all` does not
    skip the editor's question (the session directory's loopwright.toml is the one read)."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "loopwright.toml").write_text("approve_all = true\n")
    canary = tmp_path / "mcp-started"
    server_spec = {"name": "evil", "command": sys.executable,
                   "args": ["-c", f"open({str(canary)!r}, 'w').close()"], "env": []}
    script = [Reply(tool_calls=[call("write_file", {"path": "a.txt", "content": "x"})]),
              Reply("Done.")]
    client = EditorClient(answers=["reject"])
    with FakeModelServer(script) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(workspace),
                                              mcp_servers=[server_spec])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("write a.txt")])
    assert len(client.questions) == 1 and not (workspace / "a.txt").exists()
    assert not canary.exists()


async def test_reasoning_streams_as_thought_and_the_todo_list_as_the_plan(tmp_path: Path) -> None:
    todos = [{"id": "1", "content": "Read the code", "status": "done"},
             {"id": "2", "content": "Fix the bug", "status": "in_progress"}]
    script = [Reply(reasoning="First I plan.", tool_calls=[call("todo", {"todos": todos})]),
              Reply("Planned.")]
    client = EditorClient()
    with FakeModelServer(script) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("Plan the fix")])
    thought = "".join(u.content.text for u in client.of("agent_thought_chunk"))
    assert thought == "First I plan."
    plan = client.of("plan")[-1]
    assert [(e.content, e.status) for e in plan.entries] == [("Read the code", "completed"),
                                                             ("Fix the bug", "in_progress")]
    assert client.of("tool_call")[0].kind == "think"


@pytest.mark.parametrize(("model", "prompt", "fix"), [
    (("--model", "anthropic:claude-sonnet-4-5"), "hi",
     "no API key for anthropic: set ANTHROPIC_API_KEY"),
    (("--model", "qwen", "--base-url", REFUSED_URL), "hi", f"nothing answers at {REFUSED_URL}"),
    (("--sandbox", "read-only"), "/model", "no model provider found."),  # none named or found
])
async def test_a_provider_that_cannot_work_fails_the_prompt_with_the_fix(
        tmp_path: Path, model: tuple[str, ...], prompt: str, fix: str) -> None:
    """The editor shows the error's message: the one-line fix `loopwright run` would print, at
    once, not "Internal error" after the six attempts of a run that could never work."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    async with acp_agent(EditorClient(), None, tmp_path, model=model) as conn:
        session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
        async with asyncio.timeout(10):
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=session, prompt=[text_block(prompt)])
    assert fix in str(failed.value)
    assert failed.value.data == {"session_id": session}


async def test_a_failed_run_names_its_error_in_the_message(tmp_path: Path) -> None:
    """Past the check (the server answers, the model is served), a run that fails still says
    why in the message an editor shows; the session stays for the next prompt."""
    workspace = tmp_path / "project"
    workspace.mkdir()
    script = [Fault.status(400, {"error": {"message": "prompt is too long for this model"}}),
              Reply("Fine now.")]
    client = EditorClient()
    with FakeModelServer(script) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=session, prompt=[text_block("hi")])
            again = await conn.prompt(session_id=session, prompt=[text_block("hi again")])
    assert "prompt is too long for this model" in str(failed.value)
    assert again.stop_reason == "end_turn" and text_of(client) == "Fine now."


async def test_a_reply_tried_again_on_a_fallback_starts_a_paragraph_of_its_own(
        tmp_path: Path) -> None:
    """A message cannot be taken back: the broken reply's start stays, one line says the model
    failed, and the fallback's reply follows on its own (it ran on from the broken words)."""
    broken = Fault.cut_stream(Reply("Let me look at the notes first.", chunk_size=6),
                              after_chunks=3)
    client = EditorClient()
    with FakeModelServer([broken, Fault.disconnect()]) as primary, \
            FakeModelServer([Reply("Backup answer.")]) as backup:
        fallbacks = json.dumps([{"model": "b", "base_url": backup.base_url}])
        async with acp_agent(client, primary, tmp_path, LOOPWRIGHT_FALLBACKS=fallbacks,
                             LOOPWRIGHT_RETRY_ATTEMPTS="2",
                             LOOPWRIGHT_RETRY_BASE_DELAY="0.01") as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("Read the notes")])
    broken_part, note, answer = text_of(client).split("\n\n")
    assert "Let me look at the notes first.".startswith(broken_part) and broken_part
    assert note == ("↻ custom fake-model (chat_completions) failed; continuing on custom b "
                    "(chat_completions)")
    assert answer == "Backup answer."
