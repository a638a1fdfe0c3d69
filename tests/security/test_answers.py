"""The answers that let calls through: an approval callback that raises or answers anything but a
known allow word denies (and never crashes the run), a hook decision that is not a known allow
word denies, and the terminal prompt shows control characters escaped, so a forged command
cannot pass for another one."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from typing import Any

import pytest
from redteam import TRIPPED, Harness

from loopwright.cli.approval import TerminalApproval
from loopwright.hooks import Hooks, ToolHookCall


class Boom(RuntimeError):
    pass


def raising_sync(action: str, detail: str) -> bool:
    raise Boom("the approval UI crashed")


async def raising_async(action: str, detail: str) -> bool:
    await asyncio.sleep(0)
    raise Boom("the approval service is down")


def answering(value: Any) -> Any:
    def callback(action: str, detail: str) -> Any:
        return value
    return callback


BAD_CALLBACKS = [raising_sync, raising_async, *(answering(v) for v in (
    "denied", "maybe", None, 1, "true", "", {"allow": True}, ["yes"], "yes please", "nope"))]


@pytest.mark.parametrize("callback", BAD_CALLBACKS,
                         ids=["raises", "raises-async", "denied", "maybe", "None", "1", "true",
                              "empty", "dict", "list", "yes-please", "nope"])
async def test_an_approval_callback_that_fails_or_mumbles_denies(harness: Harness,
                                                                 callback: Any) -> None:
    attack = "rm -rf ./x"
    (denied,) = await harness.run(("bash", {"command": attack}), answer=None, approval=callback)
    assert "denied" in denied and TRIPPED not in denied and harness.reached == []
    assert (harness.workdir / "x" / "y").is_dir()


@pytest.mark.parametrize("word", [True, "yes", "y", "Yes", "allow", "approve", "always"])
async def test_known_allow_answers_still_allow(harness: Harness, word: Any) -> None:
    twin = "rm -rf ./build"
    harness.runnable.add(twin)
    (ran,) = await harness.run(("bash", {"command": twin}), answer=word)
    assert "[exit code 0]" in ran and not (harness.workdir / "build").exists()


BAD_DECISIONS = ["denied", "Denied", "no", None, True, "allowed?", "reject", "", "ALLOW ME"]


@pytest.mark.parametrize("decision", BAD_DECISIONS)
async def test_a_python_hook_decision_that_is_not_an_allow_word_denies(
        harness: Harness, decision: Any) -> None:
    def hook(call: ToolHookCall) -> dict[str, Any]:
        return {"decision": decision if call.arguments["command"] == "ls x" else "allow"}

    twin = "ls build"
    harness.runnable.add(twin)
    denied, ran = await harness.run(("bash", {"command": "ls x"}), ("bash", {"command": twin}),
                                    hooks=Hooks(before_tool=[hook]))
    assert "denied" in denied and harness.reached == [twin]
    assert "[exit code 0]" in ran


async def test_a_shell_hook_answering_decision_denied_denies(harness: Harness) -> None:
    """The exact report: a hook printing {"decision": "denied"} was read as allow."""
    code = ("import json, sys; call = json.load(sys.stdin); "
            "print(json.dumps({'decision': 'denied' if call['arguments']['command'] == 'ls x' "
            "else 'allow'}))")
    hook = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    twin = "ls build"
    harness.runnable.add(twin)
    denied, ran = await harness.run(("bash", {"command": "ls x"}), ("bash", {"command": twin}),
                                    hooks=Hooks.from_config({"before_tool": [hook]}))
    assert "denied" in denied and "'denied'" in denied and harness.reached == [twin]
    assert "[exit code 0]" in ran


FORGED = [
    "rm -rf ./x\r\x1b[2Kls -la",  # carriage return + erase line: only `ls -la` is visible
    "rm -rf ./x\x1b[1A\x1b[2Kls",  # cursor up
    "rm -rf ./x" + "\x08" * 10 + "ls -la     ",  # backspaces
    "rm -rf ./x #\u202e al- sl",  # right-to-left override: the line reads backwards
    "ls\u200b; rm -rf ./x",  # zero-width space
    "rm -rf ./x\x9b2K",  # a C1 control sequence introducer
    "rm -rf ./x\x1b]0;ls\x07",  # a terminal title escape
    "rm -rf ./x\x00ls",  # NUL
]


@pytest.mark.parametrize("forged", FORGED, ids=[repr(f)[:30] for f in FORGED])
async def test_the_approval_prompt_shows_control_characters_escaped(
        harness: Harness, forged: str) -> None:
    read_fd, write_fd = os.pipe()
    shown = harness.workdir.parent / "prompt.txt"
    with os.fdopen(read_fd, "r") as stdin, os.fdopen(write_fd, "w") as typing, \
            shown.open("w") as out:
        typing.write("n\n")
        typing.flush()
        prompt = TerminalApproval(stdin=stdin, out=out)
        (denied,) = await harness.run(("bash", {"command": forged}), answer=None,
                                      approval=prompt)
    text = shown.read_text()
    assert "the user declined" in denied and harness.reached == []
    assert not any((ord(ch) < 0x20 and ch != "\n") or 0x7F <= ord(ch) < 0xA0 or
                   ch in "\u202e\u200b" for ch in text)
    assert "rm -rf ./x" in text


async def test_a_plain_command_is_shown_as_it_is(harness: Harness) -> None:
    read_fd, write_fd = os.pipe()
    shown = harness.workdir.parent / "prompt.txt"
    twin = "rm -rf ./build"
    harness.runnable.add(twin)
    with os.fdopen(read_fd, "r") as stdin, os.fdopen(write_fd, "w") as typing, \
            shown.open("w") as out:
        typing.write("y\n")
        typing.flush()
        (ran,) = await harness.run(("bash", {"command": twin}), answer=None,
                                   approval=TerminalApproval(stdin=stdin, out=out))
    assert "\n    rm -rf ./build\n" in shown.read_text() and "[exit code 0]" in ran
