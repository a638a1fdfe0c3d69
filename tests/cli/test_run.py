"""`loopwright run`: the real CLI against the fake model server over HTTP.

Behaviour that needs a process of its own (exit codes, signals, environment detection, stdout
purity) runs `python -m loopwright` as a subprocess; flag plumbing runs in-process via CliRunner.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from loopwright import event_from_dict
from loopwright.cli.main import app
from loopwright.testing import FakeModelServer, Fault, Reply, call
from shared_helpers import LOCAL_SERVER_URLS, PROVIDER_VARIABLES, cli_env


def loopwright(*args: str, cwd: Path, env: dict[str, str] | None = None,
               stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "loopwright", *args], cwd=cwd, env=env or cli_env(cwd),
        input=stdin or "", capture_output=True, text=True, timeout=60,
    )


def run_against(server: FakeModelServer, *args: str, cwd: Path,
                env: dict[str, str] | None = None,
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return loopwright("run", *args, "--model", "fake-model", "--base-url", server.base_url,
                      cwd=cwd, env=env, stdin=stdin)


def invoke(server: FakeModelServer, *args: str, stdin: str | None = None) -> Result:
    """`loopwright run` in-process, in the current directory, with a clean environment."""
    unset: dict[str, str | None] = {
        key: None for key in os.environ
        if key in PROVIDER_VARIABLES or key.startswith(("LOOPWRIGHT_", "XDG_"))
    }
    return CliRunner().invoke(
        app, ["run", *args, "--model", "fake-model", "--base-url", server.base_url],
        input=stdin, env={**unset, **LOCAL_SERVER_URLS, "HOME": os.getcwd()})


def wait_until(condition: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def user_texts(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in-process CLI calls from an empty directory (no loopwright.toml around)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --- answers and events -------------------------------------------------------------------------


def test_the_answer_streams_to_stdout_and_nothing_else(tmp_path: Path) -> None:
    with FakeModelServer([Reply("The answer is 42.", chunk_size=3)]) as server:
        proc = run_against(server, "What is six times seven?", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "The answer is 42.\n"
    assert server.model_requests[0].body["stream"] is True
    assert user_texts(server.model_requests[0].body) == ["What is six times seven?"]


def test_tool_activity_goes_to_stderr_as_notes(in_tmp: Path) -> None:
    script = [Reply(tool_calls=[call("lookup", {"city": "Oslo"})]), Reply("It is cold.")]
    with FakeModelServer(script) as server:
        proc = invoke(server, "Weather in Oslo?")
    assert proc.exit_code == 0, proc.stderr
    assert proc.stdout == "It is cold.\n"
    call_note, result_note, *error = proc.stderr.splitlines()
    assert call_note == "→ lookup city=Oslo"  # the argument that matters, not raw JSON
    # no such tool: the model gets an error result, the person its lines, whole
    assert result_note.startswith("✗ lookup city=Oslo · ") and result_note.endswith("s · error")
    assert error[0].startswith("  │ Error: there is no tool named 'lookup'")
    # the review stage refused the call (one `review` event, in --json); on the terminal its
    # ✗ line and note say so, with no "review unknown_tool: skip_call" line besides them
    assert not any(line.startswith("review ") for line in proc.stderr.splitlines())


def test_a_refused_call_is_a_review_event_in_json(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("lookup", {"city": "Oslo"})]), Reply("It is cold.")]
    with FakeModelServer(script) as server:
        proc = run_against(server, "Weather in Oslo?", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    reviews = [e for e in map(json.loads, proc.stdout.splitlines()) if e["type"] == "review"]
    assert [(e["check"], e["verdict"]) for e in reviews] == [("unknown_tool", "skip_call")]


def test_json_prints_every_event_as_a_line_ending_with_done(tmp_path: Path) -> None:
    with FakeModelServer([Reply("Hello, JSON.", reasoning="thinking it over")]) as server:
        proc = run_against(server, "Say hello", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = [event_from_dict(json.loads(line)) for line in proc.stdout.splitlines()]
    kinds = [event.type for event in events]
    assert kinds[0] == "turn_start"
    assert {"reasoning_delta", "text_delta", "turn_end"} <= set(kinds)
    done = events[-1]
    assert done.type == "done"
    assert done.result.output == "Hello, JSON."
    assert "".join(e.text for e in events if e.type == "text_delta") == "Hello, JSON."


def test_reasoning_is_collapsed_to_one_line_unless_asked_for(in_tmp: Path) -> None:
    script = [Reply("Yes.", reasoning="secret musing", chunk_size=4),
              Reply("Yes.", reasoning="secret musing", chunk_size=4)]
    with FakeModelServer(script) as server:
        hidden = invoke(server, "Well?")
        shown = invoke(server, "Well?", "--show-reasoning")
    assert "secret musing" not in hidden.output
    assert hidden.stderr.splitlines() == [
        "thought for 13 chars of reasoning (--show-reasoning shows it)"]
    assert "secret musing" in shown.stderr
    assert "thought for" not in shown.stderr
    assert shown.stdout == hidden.stdout == "Yes.\n"


def test_flags_reach_the_model_request(in_tmp: Path) -> None:
    (in_tmp / "system.md").write_text("Always answer in French.", encoding="utf-8")
    with FakeModelServer([Reply("Bonjour.")]) as server:
        proc = invoke(server, "Hi", "--no-stream", "--temperature", "0.25", "--max-tokens", "64",
                      "--system", "@system.md")
    assert proc.exit_code == 0, proc.stderr
    assert proc.stdout == "Bonjour.\n"
    body = server.model_requests[0].body
    assert not body.get("stream")
    assert body["temperature"] == 0.25
    assert body["max_tokens"] == 64
    assert "Always answer in French." in body["messages"][0]["content"]


def test_prompt_can_come_from_stdin_or_a_file(in_tmp: Path) -> None:
    (in_tmp / "task.txt").write_text("Task from a file", encoding="utf-8")
    with FakeModelServer([Reply("ok"), Reply("ok")]) as server:
        piped = invoke(server, "-", stdin="Task from stdin\n")
        filed = invoke(server, "--prompt-file", "task.txt")
    assert piped.exit_code == filed.exit_code == 0
    first, second = server.model_requests
    assert user_texts(first.body) == ["Task from stdin\n"]
    assert user_texts(second.body) == ["Task from a file"]


# --- exit codes per stop reason -----------------------------------------------------------------


def test_max_turns_exits_3(tmp_path: Path) -> None:
    with FakeModelServer([Reply(tool_calls=[call("search", {"q": "x"})])]) as server:
        proc = run_against(server, "Look it up", "--max-turns", "1", cwd=tmp_path)
    assert proc.returncode == 3
    *_, stop, hint = proc.stderr.strip().splitlines()
    assert stop == "loopwright: max_turns: reached max_turns (1)"
    assert hint.startswith("loopwright: session saved; continue with: loopwright run --resume ")


def test_budget_exhausted_exits_4(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("search", {"q": "x"})]), Reply("Summary so far.")]
    env = cli_env(tmp_path, LOOPWRIGHT_ITERATION_BUDGET="1")
    with FakeModelServer(script) as server:
        proc = run_against(server, "Look it up", cwd=tmp_path, env=env)
    assert proc.returncode == 4, proc.stderr
    assert proc.stdout == "Summary so far.\n"
    assert "budget_exhausted" in proc.stderr


def test_repeating_the_same_call_exits_5(tmp_path: Path) -> None:
    same = Reply(tool_calls=[call("search", {"q": "again"})])
    with FakeModelServer([same] * 4) as server:  # no such tool: the fourth repeat stops
        proc = run_against(server, "Search", cwd=tmp_path)
    assert proc.returncode == 5, proc.stderr
    assert "loop_detected" in proc.stderr.splitlines()[-2]  # then the resume hint


def test_provider_error_exits_1_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    with FakeModelServer([Fault.status(400)]) as server:
        proc = run_against(server, "Hi", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("loopwright: error: ") and "400" in last


def test_ctrl_c_cancels_the_run_and_exits_130(tmp_path: Path) -> None:
    with FakeModelServer([Reply("far too late", delay=10)]) as server:
        args = ["run", "Take your time", "--model", "m", "--base-url", server.base_url]
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", *args], cwd=tmp_path,
                                env=cli_env(tmp_path), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: server.model_requests, "the model request")
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "far too late" not in stdout
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-2] == "loopwright: cancelled"
    assert "continue with: loopwright run --resume" in stderr.strip().splitlines()[-1]


# --- provider detection and configuration errors ------------------------------------------------


def test_provider_is_detected_from_loopwright_base_url(tmp_path: Path) -> None:
    with FakeModelServer([Reply("detected")], model="served-model") as server:
        env = cli_env(tmp_path, LOOPWRIGHT_BASE_URL=server.base_url)
        proc = loopwright("run", "Hi", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "detected\n"
    assert server.model_requests[0].body["model"] == "served-model"


def test_base_url_without_model_uses_the_servers_model(tmp_path: Path) -> None:
    with FakeModelServer([Reply("local")], model="served-model") as server:
        env = cli_env(tmp_path, OPENAI_API_KEY="sk-not-for-this-server")
        proc = loopwright("run", "Hi", "--base-url", server.base_url, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert server.model_requests[0].body["model"] == "served-model"


def test_a_local_server_is_detected_where_loopwright_ollama_url_points(tmp_path: Path) -> None:
    with FakeModelServer([Reply("from the moved server")], model="qwen-local") as server:
        env = cli_env(tmp_path, LOOPWRIGHT_OLLAMA_URL=server.base_url)
        proc = loopwright("run", "Hi", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "from the moved server\n"
    assert server.model_requests[0].body["model"] == "qwen-local"


def test_no_provider_found_says_where_it_looked(tmp_path: Path) -> None:
    proc = loopwright("run", "Hi", cwd=tmp_path)
    assert proc.returncode == 6
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    message = proc.stderr.strip()
    assert len(message.splitlines()) == 1
    for looked_for in ("LOOPWRIGHT_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ollama",
                       "--base-url"):
        assert looked_for in message


def test_json_mode_reports_a_config_error_as_a_final_event(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text('no_such_setting = 1\n', encoding="utf-8")
    proc = loopwright("run", "Hi", "--json", cwd=tmp_path)
    assert proc.returncode == 6
    (line,) = proc.stdout.splitlines()
    event = event_from_dict(json.loads(line))
    assert event.type == "error" and "no_such_setting" in event.message
    assert "no_such_setting" in proc.stderr


# --- usage errors (no subprocess needed) --------------------------------------------------------


def test_usage_errors_exit_2() -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["run"])
    both = runner.invoke(app, ["run", "Hi", "--resume", "abc", "--continue"])
    bad_mode = runner.invoke(app, ["run", "Hi", "--api-mode", "carrier-pigeon"])
    assert missing.exit_code == both.exit_code == bad_mode.exit_code == 2


def test_the_terminal_agent_can_delegate_to_a_sub_agent(tmp_path: Path) -> None:
    from loopwright.builtin.delegate import CHILD_PROMPT

    child_mark = CHILD_PROMPT.splitlines()[0]
    (tmp_path / "notes.txt").write_text("the answer is 42\n")

    def handler(request: Any) -> Reply:
        messages = request.body["messages"]
        is_child = child_mark in messages[0]["content"]
        done = sum(1 for m in messages if m["role"] == "tool")
        if is_child:
            if done == 0:
                return Reply(tool_calls=[call("read_file", {"path": "notes.txt"})])
            return Reply(text="The notes say 42.")
        if done == 0:
            return Reply(tool_calls=[call("delegate", {"task": "Read notes.txt",
                                                       "tools": ["read_file"]})])
        return Reply(text="Delegated: " + messages[-1]["content"].splitlines()[-1])

    with FakeModelServer(handler=handler) as server:
        done = run_against(server, "find the answer", "--tools", "read_file,delegate",
                           "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = [event_from_dict(json.loads(line)) for line in done.stdout.splitlines()]
    child_calls = [e for e in events if e.type == "tool_call" and e.agent]
    assert [e.name for e in child_calls] == ["read_file"]
    assert events[-1].type == "done" and "42" in events[-1].result.output


def test_a_base_url_without_a_scheme_exits_6_at_once_with_the_fix(tmp_path: Path) -> None:
    proc = loopwright("run", "Hi", "--model", "m", "--base-url", "localhost:8000", cwd=tmp_path)
    assert proc.returncode == 6, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line == ("loopwright: the base URL 'localhost:8000' has no scheme: write "
                    "http://localhost:8000 (or https://localhost:8000)")


def test_files_changed_by_bash_show_as_diffs_in_the_output_and_in_json(tmp_path: Path) -> None:
    command = "echo x >> a.txt && rm b.txt && printf 'new\\n' > c.txt"
    outputs = []
    for extra in ((), ("--json",)):
        (tmp_path / "a.txt").write_text("a\n")
        (tmp_path / "b.txt").write_text("bee\n")
        (tmp_path / "c.txt").unlink(missing_ok=True)
        script = [Reply(tool_calls=[call("bash", {"command": command})]), Reply("Done.")]
        with FakeModelServer(script) as server:
            proc = run_against(server, "Change the files", "--yes", *extra, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc)
    shown, as_json = outputs
    assert shown.stdout == "Done.\n"
    for piece in ("turn changed 3 files (+2/−1)", "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n a\n+x",
                  "--- a/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bee",
                  "--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+new"):
        assert piece in shown.stderr
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    (diff,) = [e for e in events if e["type"] == "status" and e["kind"] == "turn_diff"]
    assert diff["data"]["files"] == ["a.txt", "b.txt", "c.txt"]
    assert "+x\n" in diff["data"]["diff"] and "-bee\n" in diff["data"]["diff"]
    assert events[-1]["result"]["diff"] == diff["data"]["diff"]


async def test_each_turn_line_has_its_cost_when_the_price_is_known() -> None:
    import io

    from rich.console import Console

    from loopwright import Agent
    from loopwright.cli.render import TerminalRenderer
    from loopwright.events import TurnEnd

    err = io.StringIO()
    shown = TerminalRenderer(out=io.StringIO(), markdown=False, err=Console(
        file=err, force_terminal=True, width=80, color_system=None))
    shown.activity.live_enabled = False
    ends: list[TurnEnd] = []

    def both(event: Any) -> None:
        shown(event)
        if isinstance(event, TurnEnd):
            ends.append(event)

    script = [Reply(tool_calls=[call("lookup", {"city": "Oslo"})]), Reply("Cold.")]
    with FakeModelServer(script, model="gpt-4o-mini") as server:
        result = await Agent("gpt-4o-mini", base_url=server.base_url, api_key="k",
                             callbacks=[both]).run("Weather?")
    assert result.cost is not None and result.cost > 0
    costs = [e.cost for e in ends]
    assert all(cost is not None and cost > 0 for cost in costs) and len(costs) == 2
    assert abs(sum(c or 0 for c in costs) - result.cost) < 1e-12
    turn_lines = [line for line in err.getvalue().splitlines() if line.startswith("turn ")]
    assert [line.endswith(f" · ${cost:.4f}") for line, cost in zip(turn_lines, costs,
                                                                    strict=True)] == [True, True]


def test_a_usage_limit_stop_has_its_own_exit_code_not_a_traceback(tmp_path: Path) -> None:
    """`run` had no exit code for the `usage_limit` and `output_invalid` stops: a run held to
    `usage_limits` ended in a KeyError traceback."""
    script = [Reply(tool_calls=[call("list_dir", {"path": "."})])]  # the limit stops the 2nd
    config = tmp_path / "limits.toml"
    config.write_text("[usage_limits]\nrequests = 1\n")
    env = cli_env(tmp_path, LOOPWRIGHT_CONFIG=str(config))
    with FakeModelServer(script) as server:
        done = run_against(server, "list the files", cwd=tmp_path, env=env)
    assert done.returncode == 8, done.stderr
    assert "Traceback" not in done.stderr and "KeyError" not in done.stderr


def test_every_stop_reason_has_an_exit_code() -> None:
    from typing import get_args

    from loopwright.cli.main import EXIT_CODES
    from loopwright.result import StopReason

    assert set(get_args(StopReason)) <= set(EXIT_CODES)
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES)


LATIN_1 = "Résumé: café".encode("latin-1")


@pytest.mark.parametrize(("source", "named"), [("--prompt-file", "task.txt"),
                                               ("-", "stdin"), ("--system", "rules.txt"),
                                               ("PROMPT", "the prompt")])
def test_text_that_is_not_utf8_is_one_line_naming_where_it_came_from(
        tmp_path: Path, source: str, named: str) -> None:
    """A Latin-1 file or pipe was a rich traceback (--prompt-file, --system @FILE) or an
    "unexpected UnicodeEncodeError" once the run had started (stdin, and the argument: a store
    failure, then the run's)."""
    (tmp_path / named).write_bytes(LATIN_1)
    args: list[str | bytes] = {"--prompt-file": ["--prompt-file", named], "-": ["-"],
                               "--system": ["hi", "--system", f"@{named}"],
                               "PROMPT": [LATIN_1]}[source]
    stdin = LATIN_1 if source == "-" else b""
    with FakeModelServer([], strict=False) as server:
        done = subprocess.run(
            [sys.executable, "-m", "loopwright", "run", *args, "--model", "m", "--base-url",
             server.base_url], cwd=tmp_path, env=cli_env(tmp_path, COLUMNS="200"),
            input=stdin, capture_output=True, timeout=60)
        assert not server.model_requests
    err = " ".join(done.stderr.decode().replace("│", " ").split())
    assert done.returncode == 2, err
    assert (f"{named} is not UTF-8 text (byte 0xe9 at offset 1): convert it, e.g. iconv -f "
            "latin1 -t utf-8") in err
    assert "Traceback" not in err and "Unicode" not in err


def test_a_utf8_prompt_file_with_a_byte_order_mark_is_read_without_it(tmp_path: Path) -> None:
    (tmp_path / "task.txt").write_bytes("\ufeffSay hi".encode())
    with FakeModelServer([Reply("hi")]) as server:
        done = run_against(server, "--prompt-file", "task.txt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.model_requests[0].body["messages"][-1]["content"] == "Say hi"
