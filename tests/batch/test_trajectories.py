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
from loopwright.testing import FakeModelServer, Reply, call

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


INTERVENED = {"id": "notes", "prompt": "What does notes.txt say?", "files": {"notes.txt": "hi"},
              "tools": ["read_file"]}
# a guess about a file no tool read (set aside), then a narration (sent back), then the work;
# both checks read prose, so they are opted in (`review = "all"`)
INTERVENED_SCRIPT = [Reply("notes.txt says bye."), Reply("Let me read notes.txt now."),
                     Reply(tool_calls=[call("read_file", {"path": "notes.txt"})]),
                     Reply("notes.txt says hi.")]


async def intervened_run(tmp_path: Path, fmt: str, **kw: Any) -> dict[str, Any]:
    with FakeModelServer(INTERVENED_SCRIPT) as server:
        await run_batch([INTERVENED], tmp_path / "out", trajectories=fmt,
                        model="qwen2.5-coder-0.5b", base_url=server.base_url, api_key="k",
                        stream=False, review="all", **kw)
    [item] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    return item


async def test_openai_trajectories_give_the_replies_the_runtime_rejected_weight_0(
        tmp_path: Path) -> None:
    item = await intervened_run(tmp_path, "openai")
    roles = [(m["role"], m.get("weight")) for m in item["messages"]]
    assert roles == [("system", None), ("user", None), ("assistant", 0), ("user", None),
                     ("assistant", 0), ("user", None), ("assistant", None), ("tool", None),
                     ("assistant", None)]
    assert item["meta"]["interventions"] == {"set_aside": [2, 4], "runtime_notes": [3, 5]}
    assert item["messages"][-1]["content"] == "notes.txt says hi."


async def test_loopwright_trajectories_flag_set_aside_replies_and_runtime_notes(
        tmp_path: Path) -> None:
    item = await intervened_run(tmp_path, "messages")
    flags = [(m["role"], bool(m.get("set_aside")), bool(m.get("runtime_note")))
             for m in item["messages"]]
    assert flags[2:6] == [("assistant", True, False), ("user", False, True),
                          ("assistant", True, False), ("user", False, True)]
    assert not any(s or n for _, s, n in flags[6:])


async def test_sharegpt_trajectories_mark_interventions(tmp_path: Path) -> None:
    item = await intervened_run(tmp_path, "sharegpt")
    turns = item["conversations"]
    assert [t.get("weight") for t in turns if t["from"] == "gpt"] == [0, 0, None]
    assert [bool(t.get("runtime_note")) for t in turns if t["from"] == "human"] == [
        False, True, True]


async def test_interventions_can_be_dropped(tmp_path: Path) -> None:
    item = await intervened_run(tmp_path, "openai", interventions="drop")
    assert [m["role"] for m in item["messages"]] == ["system", "user", "assistant", "tool",
                                                     "assistant"]
    assert "interventions" not in item["meta"]
    assert "weight" not in json.dumps(item["messages"])


def test_drop_interventions_is_a_batch_flag(tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", INTERVENED)
    with FakeModelServer(INTERVENED_SCRIPT) as server:
        result = CliRunner().invoke(app, [
            "batch", str(tasks), "--out", str(tmp_path / "out"), "--trajectories", "messages",
            "--drop-interventions", "--model", "qwen2.5-coder-0.5b", "--base-url",
            server.base_url, "--no-progress"], env={"LOOPWRIGHT_REVIEW": "all"})
    assert result.exit_code == 0, result.output
    [item] = read_jsonl(tmp_path / "out" / "trajectories.jsonl")
    assert [m["role"] for m in item["messages"]] == ["system", "user", "assistant", "tool",
                                                     "assistant"]
