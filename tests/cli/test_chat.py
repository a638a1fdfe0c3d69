"""`loopwright chat`: the real REPL in a subprocess, driven through stdin, against a fake server."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopwright.testing import FakeModelServer, Reply
from shared_helpers import cli_env


def chat_command(server: FakeModelServer | None) -> list[str]:
    target = ["--model", "m", "--base-url", server.base_url] if server else []
    return [sys.executable, "-m", "loopwright", "chat", *target]


def chat(server: FakeModelServer | None, typed: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(chat_command(server), cwd=cwd, env=cli_env(cwd), input=typed,
                          capture_output=True, text=True, timeout=60)


def wait_until(condition: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def conversation(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in body["messages"] if m["role"] != "system"]


def test_turns_share_one_conversation(tmp_path: Path) -> None:
    with FakeModelServer([Reply("Hello, Ada."), Reply("Your name is Ada.")]) as server:
        proc = chat(server, "My name is Ada.\nWhat is my name?\n", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hello, Ada.\nYour name is Ada.\n"
    second = server.model_requests[1].body
    assert conversation(second) == [
        ("user", "My name is Ada."), ("assistant", "Hello, Ada."), ("user", "What is my name?"),
    ]


def test_new_starts_over_and_exit_quits(tmp_path: Path) -> None:
    with FakeModelServer([Reply("one"), Reply("two")]) as server:
        proc = chat(server, "first\n/new\nsecond\n/exit\nnot read\n", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "one\ntwo\n"
    assert [conversation(r.body) for r in server.model_requests] == [
        [("user", "first")], [("user", "second")],
    ]


def test_ctrl_c_cancels_the_reply_not_the_chat(tmp_path: Path) -> None:
    with FakeModelServer([Reply("far too late", delay=10), Reply("Here now.")]) as server:
        proc = subprocess.Popen(chat_command(server), cwd=tmp_path, env=cli_env(tmp_path),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdin is not None
            proc.stdin.write("Take your time\n")
            proc.stdin.flush()
            wait_until(lambda: server.model_requests, "the first model request")
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate("Hurry up\n", timeout=30)
        finally:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert stdout == "Here now.\n"
    assert "cancelled" in stderr
    # The cancelled turn stays in the conversation (merged into one user message on the wire).
    (last_role, last_text), = conversation(server.model_requests[1].body)[-1:]
    assert last_role == "user" and last_text.startswith("Take your time")
    assert last_text.endswith("Hurry up")


def test_missing_provider_ends_the_chat_with_the_config_exit_code(tmp_path: Path) -> None:
    proc = chat(None, "Hi\nHi again\n", tmp_path)
    assert proc.returncode == 6
    assert "no model provider found" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_unknown_slash_command_is_an_error_never_a_prompt(tmp_path: Path) -> None:
    with FakeModelServer([Reply("only this one")]) as server:
        proc = chat(server, "/modle gpt-5\n/etc/hosts lists what?\n", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "unknown command /modle: /help lists the commands" in proc.stderr
    (request,) = server.model_requests  # the path-like prompt went to the model, the typo did not
    assert conversation(request.body) == [("user", "/etc/hosts lists what?")]


def test_slash_commands_answer_without_asking_the_model(tmp_path: Path) -> None:
    with FakeModelServer([Reply("Hi.")], model="fake-model") as server:
        url = server.base_url
        proc = chat(server, "/help\nHello\n/usage\n/tools\n/model\n", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(server.model_requests) == 1
    for shown in ("/compact", "/resume", "Alt-Enter", "this conversation: ",
                  "tools: ", "read_file", f"m at {url}"):
        assert shown in proc.stderr


def test_model_switches_the_model_and_keeps_the_conversation(tmp_path: Path) -> None:
    with FakeModelServer([Reply("one"), Reply("two")]) as server:
        proc = chat(server, "first\n/model other-model\nsecond\n", tmp_path)
    assert proc.returncode == 0, proc.stderr
    first, second = server.model_requests
    assert first.body["model"] == "m" and second.body["model"] == "other-model"
    assert conversation(second.body)[:2] == [("user", "first"), ("assistant", "one")]


def test_reasoning_toggles_with_a_slash_command(tmp_path: Path) -> None:
    script = [Reply("One.", reasoning="first musing"), Reply("Two.", reasoning="second musing"),
              Reply("Three.", reasoning="third musing")]
    with FakeModelServer(script) as server:
        proc = chat(server, "a\n/reasoning\nb\n/reasoning\nc\n", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "One.\nTwo.\nThree.\n"
    err = proc.stderr
    assert "first musing" not in err and "third musing" not in err
    assert err.count("thought for 12 chars of reasoning (/reasoning shows it)") == 2
    assert "reasoning shown (dimmed)" in err and "second musing" in err
    assert err.index("reasoning shown") < err.index("second musing") < err.index(
        "reasoning hidden")


def test_a_misspelt_provider_in_model_keeps_the_chat_and_its_model(tmp_path: Path) -> None:
    """`/model anthorpic:…` was a configuration error that ended the whole chat (exit 6)."""
    with FakeModelServer([Reply("one"), Reply("two")]) as server:
        proc = chat(server, "first\n/model anthorpic:claude-x\nsecond\n", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ("unknown provider 'anthorpic' in --model anthorpic:claude-x: did you mean "
            "anthropic:claude-x?") in " ".join(proc.stderr.split())
    assert "(still using m)" in proc.stderr
    second = server.model_requests[1]
    assert second.body["model"] == "m"
    assert conversation(second.body)[:2] == [("user", "first"), ("assistant", "one")]


def test_a_piped_line_that_is_not_utf8_is_skipped_with_a_note(tmp_path: Path) -> None:
    """It crashed the chat with a traceback once the session store met the undecodable text."""
    with FakeModelServer([Reply("Hello.")]) as server:
        proc = subprocess.run(chat_command(server), cwd=tmp_path, env=cli_env(tmp_path),
                              input="café\nhello\n".encode("latin-1"), capture_output=True,
                              timeout=60)
    err = " ".join(proc.stderr.decode().split())
    assert proc.returncode == 0, err
    assert ("loopwright: line 1 of stdin is not UTF-8 text (byte 0xe9 at offset 3): skipped; "
            "convert it, e.g. iconv -f latin1 -t utf-8") in err
    (request,) = server.model_requests
    assert conversation(request.body) == [("user", "hello")]
    assert "Traceback" not in err
