"""`--trajectories openai|sharegpt|messages`: each run's conversation, tool calls and results
included, starting from the system prompt exactly as it was sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from batch_support import read_jsonl, write_tasks
from typer.testing import CliRunner

from loopwright.batch import run_batch
from loopwright.cli.main import app
from loopwright.testing import FakeModelServer

TASKS = [{"id": "read", "prompt": "read data.txt", "files": {"data.txt": "forty-two"},
          "tools": ["read_file"], "system_prompt": "Answer tersely.",
          "metadata": {"split": "dev"}},
         {"id": "say", "prompt": "say hello"}]


async def run_with(server: FakeModelServer, out: Path, fmt: str) -> dict[str, dict[str, Any]]:
    await run_batch(TASKS, out, trajectories=fmt, model="fake-model", base_url=server.base_url,
                    api_key="test")
    return {item["id"]: item for item in read_jsonl(out / "trajectories.jsonl")}


def sent_system_prompt(server: FakeModelServer, prompt: str) -> str:
    request = next(r for r in server.model_requests if r.body["messages"][1]["content"] == prompt)
    return str(request.body["messages"][0]["content"])


async def test_openai_format(model_server: FakeModelServer, tmp_path: Path) -> None:
    found = await run_with(model_server, tmp_path / "out", "openai")
    read = found["read"]
    system, user, calling, result, answer = read["messages"]
    assert system == {"role": "system",
                      "content": sent_system_prompt(model_server, "read data.txt")}
    assert "Answer tersely." in system["content"] and "<!--" not in system["content"]
    assert user == {"role": "user", "content": "read data.txt"}
    [tool_call] = calling["tool_calls"]
    assert calling["role"] == "assistant" and tool_call["type"] == "function"
    assert json.loads(tool_call["function"]["arguments"]) == {"path": "data.txt"}
    assert result == {"role": "tool", "tool_call_id": tool_call["id"],
                      "content": "     1\tforty-two\n"}
    assert answer == {"role": "assistant", "content": "     1\tforty-two\n"}
    assert [t["function"]["name"] for t in read["tools"]] == ["read_file"]
    assert read["tools"][0]["type"] == "function"
    assert "path" in read["tools"][0]["function"]["parameters"]["properties"]
    assert read["meta"]["stop_reason"] == "completed"
    assert read["meta"]["metadata"] == {"split": "dev"}
    assert [m["role"] for m in found["say"]["messages"]] == ["system", "user", "assistant"]


async def test_sharegpt_format(model_server: FakeModelServer, tmp_path: Path) -> None:
    read = (await run_with(model_server, tmp_path / "out", "sharegpt"))["read"]
    assert read["system"] == sent_system_prompt(model_server, "read data.txt")
    assert read["conversations"] == [
        {"from": "human", "value": "read data.txt"},
        {"from": "function_call",
         "value": json.dumps({"name": "read_file", "arguments": {"path": "data.txt"}})},
        {"from": "observation", "value": "     1\tforty-two\n"},
        {"from": "gpt", "value": "     1\tforty-two\n"},
    ]
    assert [t["name"] for t in json.loads(read["tools"])] == ["read_file"]


async def test_messages_format(model_server: FakeModelServer, tmp_path: Path) -> None:
    read = (await run_with(model_server, tmp_path / "out", "messages"))["read"]
    system, _, calling, result, _ = read["messages"]
    assert system["content"] == sent_system_prompt(model_server, "read data.txt")
    assert calling["tool_calls"][0]["name"] == "read_file"
    assert result["tool_call_id"] == calling["tool_calls"][0]["id"]
    assert result["name"] == "read_file"
    assert read["tools"][0]["name"] == "read_file"


def test_unknown_format_is_a_usage_error(model_server: FakeModelServer, tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", {"id": "a", "prompt": "say x"})
    result = CliRunner().invoke(app, ["batch", str(tasks), "--out", str(tmp_path / "out"),
                                      "--trajectories", "alpaca"])
    assert result.exit_code == 2
    assert "openai" in result.output and "sharegpt" in result.output
    assert model_server.requests == []


def test_sharegpt_parallel_calls_keep_their_text_and_every_result() -> None:
    from loopwright.batch.trajectories import trajectory
    from loopwright.messages import Message, ToolCall

    history = [
        Message(role="system", content="sys"), Message(role="user", content="both?"),
        Message(role="assistant", content="Checking both.", tool_calls=[
            ToolCall(id="1", name="a", arguments='{"x": 1}'),
            ToolCall(id="2", name="b", arguments="{broken")]),
        Message(role="tool", tool_call_id="1", name="a", content="A"),
        Message(role="tool", tool_call_id="2", name="b", content="B", is_error=True),
        Message(role="assistant", content="A and B"),
    ]
    item = trajectory("sharegpt", task_id="t", history=history, tools=[], meta={})
    assert item["conversations"] == [
        {"from": "human", "value": "both?"},
        {"from": "function_call", "thought": "Checking both.",
         "value": json.dumps([{"name": "a", "arguments": {"x": 1}},
                              {"name": "b", "arguments": "{broken"}])},
        {"from": "observation", "value": json.dumps(["A", "B"])},
        {"from": "gpt", "value": "A and B"},
    ]
