"""`loopwright batch` in-process: tasks, checkers, workspaces, results, summary, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batch_support import read_jsonl, write_tasks
from typer.testing import CliRunner, Result

from loopwright.cli.main import app
from loopwright.testing import FakeModelServer
from loopwright.trust import TrustStore, project_digest


def batch(server: FakeModelServer, *args: str) -> Result:
    return CliRunner().invoke(app, ["batch", *args, "--model", "gpt-4o-mini",
                                    "--base-url", server.base_url, "--api-key", "test"])


def by_id(rows: list[dict[str, object]]) -> dict[object, dict[str, object]]:
    return {row["id"]: row for row in rows}


def test_every_checker_and_own_workspace_copies(model_server: FakeModelServer,
                                                tmp_path: Path) -> None:
    source = tmp_path / "repo"
    source.mkdir()
    (source / "notes.txt").write_text("port 8417\n")
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        {"id": "exact", "prompt": "say 42", "expected": "42"},
        {"id": "exact-miss", "prompt": "say 41", "expected": "42"},
        {"id": "contains", "prompt": "read notes.txt", "workspace": "repo",
         "expected": "8417", "checker": "contains", "tools": ["read_file"]},
        {"id": "regex", "prompt": "say build 1234 ok", "expected": r"build \d+ ok",
         "checker": "regex"},
        {"id": "any-of", "prompt": "say blue", "expected": ["red", "blue"]},
        {"id": "function", "prompt": "say LOUD", "checker": "batch_checkers:shouts"},
        {"id": "rubric-pass", "prompt": "say a good answer", "rubric": "Is it good?"},
        {"id": "rubric-fail", "prompt": "say a poor answer", "checker": "rubric",
         "expected": "Is it good?"},
        {"id": "write-a", "prompt": "write notes.txt from a", "workspace": "repo",
         "tools": ["write_file"], "checker": "batch_checkers:breaks"},
        {"id": "write-b", "prompt": "write out.txt from b", "files": {"sub/x.txt": "x"},
         "tools": ["write_file"], "expected": "from b",
         "checker": "batch_checkers:wrote_expected"},
        {"id": "no-checker", "prompt": "say anything"},
    )
    out = tmp_path / "out"
    result = batch(model_server, str(tasks), "--out", str(out), "--workspaces",
                   str(tmp_path / "ws"))
    assert result.exit_code == 0, result.output
    rows = by_id(read_jsonl(out / "results.jsonl"))
    solved = {task_id for task_id, row in rows.items() if row["solved"]}
    assert solved == {"exact", "contains", "regex", "any-of", "function", "rubric-pass",
                      "write-b", "no-checker"}
    assert rows["exact-miss"]["verdict"] == {"passed": False, "checker": "exact",
                                             "detail": "expected exact '42'"}
    assert rows["function"]["verdict"]["detail"] == "output 'LOUD'"
    assert rows["rubric-fail"]["verdict"]["detail"] == "failed: graded failed"
    assert rows["write-a"]["verdict"]["detail"] == "the checker raised RuntimeError: checker bug"
    assert rows["no-checker"]["verdict"]["passed"] is None
    for row in rows.values():
        assert row["status"] == "done" and row["stop_reason"] == "completed"
        assert row["turns"] >= 1 and row["tokens"] > 0 and row["usage"]["requests"] >= 1
        assert row["cost"] > 0 and row["wall"] > 0 and len(row["session_id"]) == 32
    # each task wrote into its own copy: the source and the other copies are untouched
    assert (source / "notes.txt").read_text() == "port 8417\n"
    copies = {p.name.rsplit("-", 1)[0]: p for p in (tmp_path / "ws").iterdir()}
    assert (copies["write-a"] / "notes.txt").read_text() == "from a"
    assert (copies["contains"] / "notes.txt").read_text() == "port 8417\n"
    assert (copies["write-b"] / "sub" / "x.txt").read_text() == "x"
    assert "solved" in result.stdout and "8/11" in result.stdout
    assert "stop reasons" in result.stdout and "completed 11" in result.stdout


def test_temporary_workspaces_are_removed(model_server: FakeModelServer,
                                          tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl",
                        {"id": 1, "prompt": "write a.txt hi", "tools": ["write_file"]})
    result = batch(model_server, str(tasks), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    system = model_server.model_requests[0].body["messages"][0]["content"]
    workdir = Path(system.split("Working directory: ", 1)[1].split("\n", 1)[0])
    assert workdir.parent.name.startswith("loopwright-batch-")
    assert not workdir.parent.exists()  # the task's workspace and the batch's root


def test_malformed_lines_are_recorded_and_the_batch_goes_on(model_server: FakeModelServer,
                                                            tmp_path: Path) -> None:
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        {"id": "a", "prompt": "say one"},
        '{"id": "b", "prompt": "say two"',
        {"id": "c"},
        {"id": "d", "prompt": "say x", "expect": "x"},
        {"id": "a", "prompt": "say again"},
        {"id": "e", "prompt": "say x", "checker": "regex", "expected": "(unclosed"},
        {"id": "f", "prompt": "say x", "files": {"../escape.txt": "x"}},
        "[1, 2]",
        {"id": "g", "prompt": "say last"},
    )
    out = tmp_path / "out"
    result = batch(model_server, str(tasks), "--out", str(out))
    assert result.exit_code == 0, result.output
    rows = read_jsonl(out / "results.jsonl")
    invalid = {row["line"]: row["error"] for row in rows if row["status"] == "invalid"}
    assert invalid == {
        2: "line 2: not valid JSON (Expecting ',' delimiter at column 32)",
        3: "line 3: 'prompt' must be a non-empty string",
        4: "line 4: unknown key(s) 'expect'; a task has checker, expected, files, id, "
           "max_turns, metadata, model, prompt, rubric, system_prompt, tools, workspace "
           "(put anything else in 'metadata')",
        5: "line 5: duplicate id 'a' (first on line 1)",
        6: "line 6: 'expected' is not a valid regular expression (missing ), unterminated "
           "subpattern at position 0)",
        7: "line 7: files['../escape.txt']: give a relative path inside the workspace",
        8: "line 8: a task is a JSON object, got list",
    }
    ran = {row["id"]: row["output"] for row in rows if row["status"] == "done"}
    assert ran == {"a": "one", "g": "last"}
    assert not (tmp_path / "escape.txt").exists()
    assert "7 invalid lines" in result.stdout


def test_a_line_nested_past_the_parsers_depth_is_an_invalid_line(model_server: FakeModelServer,
                                                                 tmp_path: Path) -> None:
    """JSON nested deeper than `json` reads (a RecursionError, not a JSONDecodeError) is a
    malformed line like any other: before, the batch stopped with a raw traceback. Where it
    must not fire: a task whose metadata is nested deep, but readable, runs."""
    too_deep = '{"id": "b", "prompt": "say two", "metadata": ' + "[" * 100_000 + "]" * 100_000
    readable = {"id": "c", "prompt": "say three", "metadata": {"k": json.loads("[" * 500
                                                                          + "]" * 500)}}
    tasks = write_tasks(tmp_path / "tasks.jsonl", {"id": "a", "prompt": "say one"},
                        too_deep + "}", readable)
    out = tmp_path / "out"
    result = batch(model_server, str(tasks), "--out", str(out))
    assert result.exit_code == 0, result.output
    rows = read_jsonl(out / "results.jsonl")
    assert {row["line"]: row["error"] for row in rows if row["status"] == "invalid"} == {
        2: "line 2: not valid JSON (nested deeper than it can be read)"}
    assert {row["id"]: row["output"] for row in rows if row["status"] == "done"} == {
        "a": "one", "c": "three"}
    assert "1 invalid line" in result.stdout


@pytest.mark.parametrize("checker", ["exactly", "no_such_module:check", "batch_checkers:nope"])
def test_unknown_checker_fails_before_any_model_call(model_server: FakeModelServer,
                                                     tmp_path: Path, checker: str) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl",
                        {"id": "a", "prompt": "say one", "expected": "one"},
                        {"id": "b", "prompt": "say two", "expected": "two", "checker": checker})
    result = batch(model_server, str(tasks), "--out", str(tmp_path / "out"))
    assert result.exit_code == 6
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("loopwright: line 2: ")
    assert checker in lines[0]
    assert model_server.requests == []
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_unknown_tool_fails_before_any_model_call(model_server: FakeModelServer,
                                                  tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl",
                        {"id": "a", "prompt": "say one", "tools": ["read_file", "telepathy"]})
    result = batch(model_server, str(tasks), "--out", str(tmp_path / "out"))
    assert result.exit_code == 6
    assert "line 1: unknown tool 'telepathy'" in result.stderr
    assert model_server.requests == []


def test_existing_results_need_resume(model_server: FakeModelServer, tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", {"id": "a", "prompt": "say one"})
    out = tmp_path / "out"
    assert batch(model_server, str(tasks), "--out", str(out)).exit_code == 0
    again = batch(model_server, str(tasks), "--out", str(out))
    assert again.exit_code == 6
    assert "already holds results; pass --resume" in again.stderr
    resumed = batch(model_server, str(tasks), "--out", str(out), "--resume")
    assert resumed.exit_code == 0
    assert len(read_jsonl(out / "results.jsonl")) == 1
    assert len(model_server.model_requests) == 1


def test_summary_file(model_server: FakeModelServer, tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl",
                        *({"id": n, "prompt": f"say {n}", "expected": "3"} for n in range(5)))
    out = tmp_path / "out"
    assert batch(model_server, str(tasks), "--out", str(out)).exit_code == 0
    import json

    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"] == 5 and summary["solved"] == 1 and summary["solved_share"] == 0.2
    assert summary["by_stop_reason"] == {"completed": 5}
    assert summary["tokens"]["p50"] > 0 and summary["wall"]["max"] >= summary["wall"]["p50"]
    assert summary["ran"] == 5 and summary["cost"] > 0


def test_instruction_files_around_the_output_directory_stay_out_of_the_tasks(
        model_server: FakeModelServer, tmp_path: Path) -> None:
    # a batch run from inside a project must not hand that project's instructions to every task
    (tmp_path / "AGENTS.md").write_text("PROJECT RULE: always answer in French.\n")
    own = tmp_path / "task-repo"
    own.mkdir()
    (own / "AGENTS.md").write_text("TASK RULE: keep answers short.\n")
    tasks = write_tasks(tmp_path / "tasks.jsonl", {"id": "bare", "prompt": "say hi"},
                        {"id": "repo", "prompt": "say yo", "workspace": "task-repo"})
    TrustStore().trust(own.resolve(), project_digest(own))  # its copy is trusted like it
    result = batch(model_server, str(tasks), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    systems = {r.body["messages"][1]["content"]: r.body["messages"][0]["content"]
               for r in model_server.model_requests}
    assert "PROJECT RULE" not in systems["say hi"] and "PROJECT RULE" not in systems["say yo"]
    assert "TASK RULE" in systems["say yo"]  # the task's own project files still count
    workdir = Path(systems["say hi"].split("Working directory: ", 1)[1].split("\n", 1)[0])
    assert not workdir.is_relative_to(tmp_path) and not workdir.exists()  # removed after


def test_workspaces_dir_keeps_them(model_server: FakeModelServer, tmp_path: Path) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl",
                        {"id": "a/b", "prompt": "write x.txt kept", "tools": ["write_file"]})
    result = batch(model_server, str(tasks), "--out", str(tmp_path / "out"),
                   "--workspaces", str(tmp_path / "ws"))
    assert result.exit_code == 0, result.output
    [kept] = (tmp_path / "ws").iterdir()
    assert kept.name.startswith("a_b-") and (kept / "x.txt").read_text() == "kept"
