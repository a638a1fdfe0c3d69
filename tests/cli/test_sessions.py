"""`loopwright sessions …` and `loopwright run --resume/--continue` against a real database.

Crash and resume run the real CLI in subprocesses (SIGKILL needs a process of its own); the
`sessions` commands run in-process through CliRunner. Every test points LOOPWRIGHT_DATA_DIR at
its own directory.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from loopwright import Agent
from loopwright.messages import Message, ToolCall, assistant, tool_result, user
from loopwright.store import RunRecord
from loopwright.store.sqlite import SQLiteStore
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import LOCAL_SERVER_URLS, PROVIDER_VARIABLES, cli_env


def clean_env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path / "home", LOOPWRIGHT_DATA_DIR=str(tmp_path / "data"),
                   LOOPWRIGHT_API_KEY="k")


def cli_run(server: FakeModelServer, *args: str, cwd: Path, env: dict[str, str]
            ) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "loopwright.cli.main", "run", *args, "--model", "fake-model",
         "--base-url", server.base_url], cwd=cwd, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def invoke(tmp_path: Path, *args: str, stdin: str | None = None) -> Result:
    """The CLI in-process, with a clean environment and the test's own data directory."""
    from loopwright.cli.main import app

    env: dict[str, str | None] = {key: None for key in os.environ
                                  if key in PROVIDER_VARIABLES
                                  or key.startswith(("LOOPWRIGHT_", "XDG_"))}
    env.update(LOOPWRIGHT_DATA_DIR=str(tmp_path / "data"), LOOPWRIGHT_API_KEY="k",
               **LOCAL_SERVER_URLS)
    return CliRunner().invoke(app, list(args), env=env, input=stdin)


def sessions(tmp_path: Path, *args: str, stdin: str | None = None) -> Result:
    return invoke(tmp_path, "sessions", *args, stdin=stdin)


def run_in_process(tmp_path: Path, server: FakeModelServer, *args: str) -> Result:
    return invoke(tmp_path, "run", *args, "--model", "fake-model", "--base-url", server.base_url)


def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "sessions.db"


def test_a_killed_cli_run_resumes_to_completion(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    env = clean_env(tmp_path)
    script = [Reply(tool_calls=[call("read_file", {"path": "notes.txt"})]),
              Reply("never delivered", delay=30)]
    with FakeModelServer(script) as server:
        child = cli_run(server, "Summarise notes.txt", cwd=tmp_path, env=env)
        deadline = time.monotonic() + 30
        while len(server.model_requests) < 2:  # the second reply is in flight
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the run never reached its second request"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=10)
    with SQLiteStore(db_path(tmp_path)) as store:
        (info,) = store.list_sessions()
        assert [m.role for m in store.load(info.id)] == ["user", "assistant", "tool"]
    with FakeModelServer([Reply("Two lines: alpha and beta.")]) as server:
        resumed = run_in_process(tmp_path, server, "--resume", info.id[:6],
                                 "--workdir", str(tmp_path))
        sent = server.model_requests[0].body or {}
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout.strip() == "Two lines: alpha and beta."
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool"]
    assert "alpha" in sent["messages"][3]["content"]
    with SQLiteStore(db_path(tmp_path)) as store:
        stored = store.load(info.id)
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
        assert [m.content for m in stored].count("Summarise notes.txt") == 1
        assert store.get(info.id).stop_reason == "completed"  # type: ignore[union-attr]


def test_continue_picks_the_latest_session_in_this_directory(tmp_path: Path) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    with FakeModelServer([Reply("first"), Reply("other"), Reply("continued")]) as server:
        for cwd, prompt in ((here, "task here"), (elsewhere, "task elsewhere")):
            assert run_in_process(tmp_path, server, prompt, "--workdir", str(cwd)).exit_code == 0
        continued = run_in_process(tmp_path, server, "--continue", "and then?",
                                   "--workdir", str(here))
        sent = server.model_requests[2].body or {}
    assert continued.exit_code == 0, continued.output
    assert continued.stdout.strip() == "continued"
    assert [m["content"] for m in sent["messages"][1:]] == ["task here", "first", "and then?"]


def test_resume_of_an_unknown_session_is_a_usage_error(tmp_path: Path) -> None:
    SQLiteStore(db_path(tmp_path)).close()
    with FakeModelServer([]) as server:
        result = run_in_process(tmp_path, server, "--resume", "nope")
    assert result.exit_code == 2
    assert "no session matches 'nope'" in result.output


# --- the sessions commands ------------------------------------------------------------------------


def seed(tmp_path: Path) -> tuple[str, str]:
    """Two sessions: one with a tool call and a denied-looking audit trail, one plain."""
    store = SQLiteStore(db_path(tmp_path))
    call_ = ToolCall(id="c1", name="grep", arguments='{"pattern": "TODO"}')
    store.create("aaa111", model="gpt-4o", cwd=str(tmp_path), title="find the todos")
    for message in (user("find the TODO markers"),
                    Message(role="assistant", content="", tool_calls=[call_],
                            reasoning="grep is fastest"),
                    tool_result(call_, "src/a.py:3: # TODO tidy\n" * 30),
                    assistant("There are 30 TODO markers in src/a.py.")):
        store.append("aaa111", message)
    store.record_run("aaa111", RunRecord(run_id="run1", stop_reason="completed", cost=0.0123),
                     model="gpt-4o", ended=True)
    store.record_events("aaa111", "run1", [
        {"type": "tool_call", "id": "c1", "name": "grep", "arguments": {"pattern": "TODO"}},
        {"type": "tool_result", "id": "c1", "name": "grep", "is_error": False,
         "duration": 0.25, "content_chars": 750, "data": {}},
    ])
    store.create("bbb222", model="claude-sonnet-4-5", cwd="/somewhere/else",
                 title="write a poem")
    store.append("bbb222", user("write a poem about lighthouses"))
    store.close()
    return "aaa111", "bbb222"


def test_list_shows_recent_sessions_with_filters(tmp_path: Path) -> None:
    seed(tmp_path)
    everything = sessions(tmp_path, "list")
    assert everything.exit_code == 0, everything.output
    assert everything.output.index("bbb222") < everything.output.index("aaa111")  # recent first
    assert "$0.0123" in everything.output
    by_model = sessions(tmp_path, "list", "--model", "gpt-4o", "--json")
    assert [json.loads(line)["id"] for line in by_model.output.splitlines()] == ["aaa111"]
    by_dir = sessions(tmp_path, "list", "--cwd", str(tmp_path), "--json")
    assert [json.loads(line)["id"] for line in by_dir.output.splitlines()] == ["aaa111"]
    limited = sessions(tmp_path, "list", "--limit", "1", "--json")
    assert len(limited.output.splitlines()) == 1


def test_list_without_a_database_says_so(tmp_path: Path) -> None:
    result = sessions(tmp_path, "list")
    assert result.exit_code == 0
    assert "No sessions found." in result.output
    assert not db_path(tmp_path).exists()


def test_show_prints_the_transcript_and_with_events_the_audit_log(tmp_path: Path) -> None:
    seed(tmp_path)
    shown = sessions(tmp_path, "show", "aaa")
    assert shown.exit_code == 0, shown.output
    for text in ("session aaa111", "find the TODO markers", "grep is fastest",
                 '→ grep({"pattern": "TODO"})', "There are 30 TODO markers",
                 "more lines; --full shows all"):
        assert text in shown.output
    assert "tool calls" not in shown.output
    audited = sessions(tmp_path, "show", "aaa111", "--events", "--full")
    assert audited.exit_code == 0, audited.output
    assert "more lines" not in audited.output
    audit_line = next(line for line in audited.output.splitlines()
                      if "grep" in line and "750 chars" in line)
    assert "0.250" in audit_line and "allowed" in audit_line


def test_search_finds_messages_with_snippets(tmp_path: Path) -> None:
    seed(tmp_path)
    found = sessions(tmp_path, "search", "lighthouses")
    assert found.exit_code == 0, found.output
    assert "bbb222" in found.output and "write a poem about lighthouses" in found.output
    assert "aaa111" not in found.output
    nothing = sessions(tmp_path, "search", "zeppelin")
    assert "No messages match 'zeppelin'." in nothing.output


def test_export_round_trips_the_conversation(tmp_path: Path) -> None:
    seed(tmp_path)
    out = tmp_path / "export.jsonl"
    result = sessions(tmp_path, "export", "aaa", "--output", str(out))
    assert result.exit_code == 0, result.output
    exported = [Message.from_dict(json.loads(line)) for line in out.read_text().splitlines()]
    with SQLiteStore(db_path(tmp_path)) as store:
        assert exported == store.load("aaa111")
    to_stdout = sessions(tmp_path, "export", "bbb222")
    assert json.loads(to_stdout.output.splitlines()[0])["content"] == (
        "write a poem about lighthouses")


def test_export_to_a_file_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    seed(tmp_path)
    (tmp_path / "a folder").mkdir()
    for output, why in ((tmp_path / "a folder", "Is a directory"),
                        (tmp_path / "no folder" / "out.jsonl", "No such file or directory")):
        result = sessions(tmp_path, "export", "aaa", "--output", str(output))
        assert result.exit_code == 1, result.exception
        assert not isinstance(result.exception, OSError)  # said, not raised
        assert f"cannot write {output}: {why}" in result.output


async def test_export_of_an_agent_run_starts_with_its_system_prompt(tmp_path: Path) -> None:
    with FakeModelServer([Reply("hello")]) as server:
        result = await Agent("m", base_url=server.base_url, api_key="k",
                             store=db_path(tmp_path)).run("hi")
    exported = sessions(tmp_path, "export", result.session_id or "")
    lines = [Message.from_dict(json.loads(line)) for line in exported.output.splitlines()]
    assert lines == result.messages


def test_rm_deletes_after_confirmation(tmp_path: Path) -> None:
    seed(tmp_path)
    refused = sessions(tmp_path, "rm", "aaa", stdin="n\n")
    assert refused.exit_code == 1
    deleted = sessions(tmp_path, "rm", "aaa", "bbb", "--yes")
    assert deleted.exit_code == 0, deleted.output
    with SQLiteStore(db_path(tmp_path)) as store:
        assert store.list_sessions() == []


def test_resume_continues_a_session_in_chat(tmp_path: Path) -> None:
    from loopwright.cli.main import app

    with FakeModelServer([Reply("Hi Ada."), Reply("You are Ada.")]) as server:
        Agent("fake-model", base_url=server.base_url, api_key="k", store=db_path(tmp_path),
              session_id="ada-0001").chat("I am [bold]Ada[/bold].")
        listed = sessions(tmp_path, "list")
        assert "I am [bold]Ada[/bold]." in listed.output  # titles are text, not markup
        chatted = CliRunner().invoke(
            app, ["sessions", "resume", "ada"], input="Who am I?\n/exit\n",
            env={"LOOPWRIGHT_DATA_DIR": str(tmp_path / "data"), "LOOPWRIGHT_API_KEY": "k",
                 "LOOPWRIGHT_BASE_URL": server.base_url, "LOOPWRIGHT_MODEL": "fake-model"})
        sent = server.model_requests[1].body or {}
    assert chatted.exit_code == 0, chatted.output
    assert "You are Ada." in chatted.stdout
    assert [m["content"] for m in sent["messages"][1:]] == [
        "I am [bold]Ada[/bold].", "Hi Ada.", "Who am I?"]


def test_ambiguous_and_unknown_ids_are_explained(tmp_path: Path) -> None:
    seed(tmp_path)
    with SQLiteStore(db_path(tmp_path)) as store:
        store.create("aaa999")
    ambiguous = sessions(tmp_path, "show", "aaa")
    assert ambiguous.exit_code == 1
    assert "matches several sessions" in ambiguous.output
    unknown = sessions(tmp_path, "export", "zzz")
    assert unknown.exit_code == 1
    assert "no session matches 'zzz'" in unknown.output


def test_a_corrupt_database_is_reported_not_a_traceback(tmp_path: Path) -> None:
    db_path(tmp_path).parent.mkdir(parents=True)
    db_path(tmp_path).write_bytes(b"this is not sqlite" * 500)
    result = sessions(tmp_path, "list")
    assert result.exit_code == 1
    assert "not a loopwright session database or is corrupt" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", ["show", "export"])
def test_commands_on_a_missing_database_fail_clearly(tmp_path: Path, command: str) -> None:
    result = sessions(tmp_path, command, "abc")
    assert result.exit_code == 1
    assert "no session database at" in result.output


def test_sessions_resume_takes_the_provider_flags(tmp_path: Path) -> None:
    from loopwright.cli.main import app

    with FakeModelServer([Reply("Hi Ada."), Reply("You are Ada.")]) as server:
        Agent("fake-model", base_url=server.base_url, api_key="k", store=db_path(tmp_path),
              session_id="ada-0002").chat("I am Ada.")
        chatted = CliRunner().invoke(
            app, ["sessions", "resume", "ada", "--model", "fake-model", "--base-url",
                  server.base_url, "--api-key", "k"], input="Who am I?\n/exit\n",
            env={"LOOPWRIGHT_DATA_DIR": str(tmp_path / "data"), **LOCAL_SERVER_URLS})
    assert chatted.exit_code == 0, chatted.output
    assert "You are Ada." in chatted.stdout


def test_run_chat_and_sessions_resume_share_one_declaration_of_the_agent_flags() -> None:
    import dataclasses

    from loopwright.cli.main import app
    from loopwright.cli.options import AgentFlags

    runner = CliRunner()
    flags = {f"--{f.name.replace('_', '-')}" for f in dataclasses.fields(AgentFlags)} - {
        "--continue-last"} | {"--continue"}
    for command in (["run"], ["chat"], ["sessions", "resume"]):
        shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).output
        expected = flags - ({"--resume", "--continue"} if command[0] == "sessions" else set())
        assert {flag for flag in expected if flag not in shown} == set(), command


def test_the_resume_hint_works_when_the_provider_came_from_flags(tmp_path: Path) -> None:
    with FakeModelServer([Reply("First answer."), Reply("Second answer.")],
                         model="served") as server:
        first = invoke(tmp_path, "run", "Start", "--model", "fake-model", "--base-url",
                       server.base_url, "--api-mode", "chat_completions")
        assert first.exit_code == 0, first.output
        with SQLiteStore(db_path(tmp_path)) as store:
            (info,) = store.list_sessions()
        assert (info.model, info.base_url, info.api_mode) == (
            "fake-model", server.base_url, "chat_completions")
        again = invoke(tmp_path, "run", "--resume", info.id[:8], "Go on")  # no provider flags
        assert again.exit_code == 0, again.output
        second = server.model_requests[1].body or {}
    assert again.stdout.strip() == "Second answer."
    assert second["model"] == "fake-model"
    assert [m["content"] for m in second["messages"][1:]] == ["Start", "First answer.", "Go on"]


def test_provider_flags_override_the_stored_provider_on_resume(tmp_path: Path) -> None:
    with FakeModelServer([Reply("From the first.")]) as first:
        started = invoke(tmp_path, "run", "Start", "--model", "fake-model", "--base-url",
                         first.base_url)
        assert started.exit_code == 0, started.output
    with SQLiteStore(db_path(tmp_path)) as store:
        (info,) = store.list_sessions()
    with FakeModelServer([Reply("From the second.")]) as second:
        second_url = second.base_url
        moved = invoke(tmp_path, "run", "--continue", "Go on", "--model", "other",
                       "--base-url", second.base_url)
        body = second.model_requests[0].body or {}
    assert moved.exit_code == 0, moved.output
    assert body["model"] == "other"
    with SQLiteStore(db_path(tmp_path)) as store:
        assert store.get(info.id).base_url == second_url  # type: ignore[union-attr]


def test_sessions_resume_reads_and_writes_the_database_given_with_db(tmp_path: Path) -> None:
    """`sessions resume ID --db X` once looked the session up in the default database (and saved
    to it): X must be where the session, its provider and the new turns come from and go."""
    other = tmp_path / "elsewhere" / "other.db"
    other.parent.mkdir()
    with FakeModelServer([Reply("Hi Ada."), Reply("You are Ada.")]) as server:
        Agent("fake-model", base_url=server.base_url, api_key="k", store=other,
              session_id="ada-0003").chat("I am Ada.")
        chatted = invoke(tmp_path, "sessions", "resume", "ada", "--db", str(other),
                         stdin="Who am I?\n/exit\n")  # no provider flags: the stored one
        sent = server.model_requests[1].body or {}
    assert chatted.exit_code == 0, chatted.output
    assert "You are Ada." in chatted.stdout
    assert [m["content"] for m in sent["messages"][1:]] == ["I am Ada.", "Hi Ada.", "Who am I?"]
    assert not db_path(tmp_path).exists()  # nothing went to the default database
    with SQLiteStore(other) as store:
        assert [m.content for m in store.load("ada-0003")][-1] == "You are Ada."


def test_sessions_resume_with_db_takes_provider_overrides(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with FakeModelServer([Reply("Hi Ada.")]) as first:
        Agent("fake-model", base_url=first.base_url, api_key="k", store=other,
              session_id="ada-0004").chat("I am Ada.")
    with FakeModelServer([Reply("Still Ada.")]) as second:
        second_url = second.base_url
        moved = invoke(tmp_path, "sessions", "resume", "ada-0004", "--db", str(other),
                       "--model", "other-model", "--base-url", second.base_url,
                       stdin="Who am I?\n/exit\n")
        body = second.model_requests[0].body or {}
    assert moved.exit_code == 0, moved.output
    assert body["model"] == "other-model"
    assert [m["content"] for m in body["messages"][1:]] == ["I am Ada.", "Hi Ada.", "Who am I?"]
    with SQLiteStore(other) as store:
        info = store.get("ada-0004")
    assert info is not None and (info.model, info.base_url) == ("other-model", second_url)


def test_sessions_resume_with_a_postgresql_db(tmp_path: Path, postgres_server: str) -> None:
    from loopwright.cli.store import open_browser
    from pg_server import fresh_database

    dsn = fresh_database(postgres_server)
    with FakeModelServer([Reply("Hi Ada."), Reply("You are Ada.")]) as server:
        Agent("fake-model", base_url=server.base_url, api_key="k", store=dsn,
              session_id="ada-0005").chat("I am Ada.")
        chatted = invoke(tmp_path, "sessions", "resume", "ada", "--db", dsn,
                         stdin="Who am I?\n/exit\n")
        sent = server.model_requests[1].body or {}
    assert chatted.exit_code == 0, chatted.output
    assert [m["content"] for m in sent["messages"][1:]] == ["I am Ada.", "Hi Ada.", "Who am I?"]
    assert not db_path(tmp_path).exists()
    with open_browser(dsn) as store:
        assert [m.content for m in store.load("ada-0005")][-1] == "You are Ada."


def blocking_store_threads() -> list[str]:
    import threading

    return [t.name for t in threading.enumerate() if t.name == "loopwright-blocking-store"]


def open_descriptors_to(path: Path) -> list[str]:
    """This process's open file descriptors on `path` (and its -wal/-shm side files)."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(str(path)):
            found.append(target)
    return found


@pytest.mark.parametrize("command", [["list"], ["show", "ada"], ["search", "Ada"],
                                     ["export", "ada"]])
def test_each_sessions_command_closes_its_postgresql_store(
        tmp_path: Path, postgres_server: str, command: list[str]) -> None:
    """Each command opened its store and never closed it: a private event loop, its thread and
    a server connection left behind per command by anyone driving the CLI in-process."""
    from pg_server import fresh_database

    dsn = fresh_database(postgres_server)
    with FakeModelServer([Reply("Hi Ada.")]) as server:
        Agent("fake-model", base_url=server.base_url, api_key="k", store=dsn,
              session_id="ada-0006").chat("I am Ada.")
    before = blocking_store_threads()
    done = sessions(tmp_path, *command, "--db", dsn)
    assert done.exit_code == 0, done.output
    assert blocking_store_threads() == before


@pytest.mark.parametrize("command", [["list"], ["show", "aaa"], ["search", "TODO"],
                                     ["export", "aaa"]])
def test_each_sessions_command_closes_its_sqlite_file(tmp_path: Path, command: list[str]
                                                      ) -> None:
    seed(tmp_path)  # written and closed: no other connection of this process on the file
    done = sessions(tmp_path, *command)
    assert done.exit_code == 0, done.output
    assert open_descriptors_to(db_path(tmp_path)) == []
