"""Hooks (hooks.py): Python callables and shell commands around model calls, tools and events."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, ConfigError, tool
from loopwright.config import load_settings
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.hooks import EventHooks, Hooks, ToolHookCall
from loopwright.messages import ModelRequest, ModelResponse
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.execute import GateDecision
from shared_helpers import trust_project

FAST = RetryPolicy(base_delay=0.01, jitter=0)
PY = shlex.quote(sys.executable)

ran: list[str] = []


@tool
def shout(text: str) -> str:
    """Say it loudly."""
    ran.append(text)
    return text.upper()


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def agent_for(server: FakeModelServer, **kwargs: Any) -> Agent:
    return Agent("m", base_url=server.base_url, api_key="k", retry=FAST, tools=[shout], **kwargs)


def one_call(text: str = "hi") -> list[Any]:
    return [Reply(tool_calls=[call("shout", {"text": text})]), Reply(text="finished")]


def tool_results(messages: Any) -> list[str]:
    return [m.content for m in messages if m.role == "tool"]


def py_hook(code: str) -> str:
    """A shell command running Python code that reads the hook's JSON from stdin as `data`."""
    return f"{PY} -c {shlex.quote('import json, sys; data = json.load(sys.stdin); ' + code)}"


# --- Python hooks ---


async def test_before_tool_can_deny_with_a_reason() -> None:
    seen: list[ToolHookCall] = []

    def guard(hook_call: ToolHookCall) -> dict[str, str] | None:
        seen.append(hook_call)
        return {"decision": "deny", "reason": "shouting is not allowed"}

    with FakeModelServer(replies=one_call()) as server:
        result = await agent_for(server, hooks=Hooks(before_tool=[guard])).run("go")
    assert ran == []
    assert seen[0].tool == "shout" and seen[0].arguments == {"text": "hi"}
    (content,) = tool_results(result.messages)
    assert "denied" in content and "shouting is not allowed" in content


async def test_before_tool_can_rewrite_arguments_and_hooks_chain() -> None:
    async def soften(hook_call: ToolHookCall) -> dict[str, Any]:
        return {"arguments": {"text": hook_call.arguments["text"] + " please"}}

    def check(hook_call: ToolHookCall) -> GateDecision | None:
        assert hook_call.arguments == {"text": "hi please"}  # sees the rewrite
        return None

    with FakeModelServer(replies=one_call()) as server:
        result = await agent_for(server, hooks={"before_tool": [soften, check]}).run("go")
    assert ran == ["hi please"] and tool_results(result.messages) == ["HI PLEASE"]


async def test_a_before_tool_hook_that_raises_fails_closed() -> None:
    events: list[Event] = []

    def broken(hook_call: ToolHookCall) -> None:
        raise RuntimeError("bug in hook")

    with FakeModelServer(replies=one_call()) as server:
        agent = agent_for(server, hooks=Hooks(before_tool=[broken]), callbacks=[events.append])
        result = await agent.run("go")
    assert ran == []
    assert "a safety hook failed (bug in hook)" in tool_results(result.messages)[0]
    assert any(isinstance(e, StatusEvent) and e.kind == "hook_error" for e in events)


async def test_after_tool_can_replace_the_result() -> None:
    def redact(hook_call: ToolHookCall) -> str | None:
        assert hook_call.result == "SECRET" and not hook_call.is_error
        return "[redacted]"

    with FakeModelServer(replies=one_call("secret")) as server:
        result = await agent_for(server, hooks=Hooks(after_tool=[redact])).run("go")
    assert tool_results(result.messages) == ["[redacted]"]
    assert server.model_requests[1].body is not None
    assert "SECRET" not in json.dumps(server.model_requests[1].body)


async def test_model_hooks_edit_the_request_and_the_response() -> None:
    def add_note(request: ModelRequest) -> None:
        request.extra_body["metadata"] = {"hooked": True}

    async def rewrite(response: ModelResponse) -> None:
        response.message.content = response.message.content.replace("finished", "edited")

    with FakeModelServer(replies=[Reply(text="finished")]) as server:
        agent = agent_for(server, hooks=Hooks(before_model=[add_note], after_model=[rewrite]))
        result = await agent.run("go")
    assert result.output == "edited"
    body = server.model_requests[0].body
    assert body is not None and body["metadata"] == {"hooked": True}


async def test_on_event_sees_every_event() -> None:
    seen: list[str] = []
    with FakeModelServer(replies=one_call()) as server:
        await agent_for(server, hooks={"on_event": [lambda e: seen.append(e.type)]}).run("go")
    assert seen[0] == "turn_start" and seen[-1] == "done"
    assert "tool_call" in seen and "tool_result" in seen


# --- shell command hooks ---


async def test_a_command_hook_gets_json_and_can_deny() -> None:
    deny = py_hook("print(json.dumps({'decision': 'deny', 'reason': 'no ' + data['tool'] + "
                   "' ' + data['arguments']['text']}))")
    hooks = {"before_tool": [{"command": deny, "tools": "shout|other"}]}
    with FakeModelServer(replies=one_call()) as server:
        result = await agent_for(server, hooks=hooks).run("go")
    assert ran == [] and "no shout hi" in tool_results(result.messages)[0]


async def test_a_command_hook_only_applies_to_its_tools() -> None:
    hooks = {"before_tool": [{"command": "exit 1", "tools": "bash|write_file"}]}
    with FakeModelServer(replies=one_call()) as server:
        result = await agent_for(server, hooks=hooks).run("go")
    assert tool_results(result.messages) == ["HI"]


async def test_a_command_hook_can_rewrite_arguments() -> None:
    rewrite = py_hook("print(json.dumps({'arguments': {'text': data['arguments']['text'] * 2}}))")
    with FakeModelServer(replies=one_call("ab")) as server:
        result = await agent_for(server, hooks={"before_tool": [rewrite]}).run("go")
    assert tool_results(result.messages) == ["ABAB"]


@pytest.mark.parametrize("command,reason", [
    ("sleep 5", "timed out after 0.2s"),
    ("echo nope >&2; exit 3", "exited with code 3: nope"),
    ("echo not json", "not JSON"),
])
async def test_failing_command_hooks_deny_the_call(command: str, reason: str) -> None:
    events: list[Event] = []
    hooks = {"before_tool": [{"command": command, "timeout": 0.2}]}
    with FakeModelServer(replies=one_call()) as server:
        agent = agent_for(server, hooks=hooks, callbacks=[events.append])
        result = await agent.run("go")
    assert ran == []
    assert reason in tool_results(result.messages)[0]
    errors = [e for e in events if isinstance(e, StatusEvent) and e.kind == "hook_error"]
    assert errors and reason in errors[0].message


async def test_an_empty_answer_is_no_objection() -> None:
    with FakeModelServer(replies=one_call()) as server:
        result = await agent_for(server, hooks={"before_tool": ["cat > /dev/null"]}).run("go")
    assert tool_results(result.messages) == ["HI"]


async def test_after_tool_command_hook_replaces_and_a_broken_one_is_reported() -> None:
    events: list[Event] = []
    replace = py_hook("print(json.dumps({'result': data['result'] + '!'}))")
    hooks = {"after_tool": [{"command": replace}, {"command": "exit 2"}]}
    with FakeModelServer(replies=one_call()) as server:
        result = await agent_for(server, hooks=hooks, callbacks=[events.append]).run("go")
    assert tool_results(result.messages) == ["HI!"]  # the failing hook kept the result
    assert any(isinstance(e, StatusEvent) and e.kind == "hook_error" for e in events)


async def test_on_event_command_hooks_run_in_the_background(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    append = py_hook(f"open({str(log)!r}, 'a').write(data['event']['type'] + '\\n')")
    hooks = {"on_event": [{"command": append, "events": "tool_call|done"}]}
    with FakeModelServer(replies=one_call()) as server:
        agent = agent_for(server, hooks=hooks)
        await agent.run("go")
        (event_hooks,) = [c for c in agent.callbacks if isinstance(c, EventHooks)]
        await event_hooks.drain()
    assert sorted(log.read_text().split()) == ["done", "tool_call"]


async def test_model_command_hooks_observe_and_failures_do_not_stop_the_run(
        tmp_path: Path) -> None:
    log = tmp_path / "model.jsonl"
    record = py_hook(f"open({str(log)!r}, 'a').write(json.dumps(data) + '\\n')")
    events: list[Event] = []
    hooks = {"before_model": [record, "exit 1"], "after_model": [record]}
    with FakeModelServer(replies=[Reply(text="hello")]) as server:
        result = await agent_for(server, hooks=hooks, callbacks=[events.append]).run("go")
    assert result.output == "hello"
    before, after = (json.loads(line) for line in log.read_text().splitlines())
    assert before["hook"] == "before_model" and before["tools"] == ["shout"]
    assert after["hook"] == "after_model" and after["text"] == "hello"
    assert any(isinstance(e, StatusEvent) and e.kind == "hook_error" for e in events)


async def test_the_script_a_command_hook_runs_is_protected_in_the_runs_workdir(
        tmp_path: Path) -> None:
    from loopwright.builtin.files import write_file

    (tmp_path / "check.py").write_text("pass\n")
    replies = [Reply(tool_calls=[call("write_file", {"path": "check.py", "content": "x"}),
                                 call("write_file", {"path": "notes.txt", "content": "y"})]),
               Reply(text="done")]
    with FakeModelServer(replies=replies) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=[write_file], hooks={"after_tool": [f"{PY} check.py"]})
        handle = await agent.start("go", workdir=tmp_path)  # not the process's directory
        result = await handle.task
    guarded, other = tool_results(result.messages)
    assert "check.py is protected" in guarded and "is protected" not in other
    assert (tmp_path / "check.py").read_text() == "pass\n"
    assert (tmp_path / "notes.txt").read_text() == "y"  # a file no hook names: written


# --- configuration ---


def test_hooks_come_from_loopwright_toml(tmp_path: Path) -> None:
    (tmp_path / "loopwright.toml").write_text(
        '[hooks]\nbefore_tool = [{command = "./check.sh", tools = "bash|write_file", '
        'timeout = 10}]\n')
    trust_project(tmp_path)  # hooks run commands: a project's own need the user's trust
    hooks = Hooks.from_config(load_settings(cwd=tmp_path).hooks)
    (hook,) = hooks.before_tool
    assert not callable(hook)
    assert hook.command == "./check.sh" and hook.timeout == 10
    assert hook.applies_to_tool("bash") and not hook.applies_to_tool("read_file")


@pytest.mark.parametrize("value,message", [
    ({"before_everything": []}, "unknown hook"),
    ({"before_tool": [{"cmd": "x"}]}, "needs `command`"),
    ({"before_tool": [{"command": "x", "tools": "("}]}, "bad regex"),
    ({"after_tool": [42]}, "neither a callable"),
])
def test_bad_hook_configs_are_config_errors(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Agent("m", base_url="http://127.0.0.1:9", api_key="k", hooks=value)


def test_hooks_from_the_environment_as_json(tmp_path: Path) -> None:
    settings = load_settings(cwd=tmp_path, environ={
        "LOOPWRIGHT_HOOKS": '{"after_tool": [{"command": "./redact.sh", "tools": "bash"}]}'})
    (hook,) = Hooks.from_config(settings.hooks).after_tool
    assert not callable(hook) and hook.command == "./redact.sh"
