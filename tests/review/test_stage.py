"""The review stage through the public API: one `review` event per verdict that is not accept
(callbacks, the session, `--json`), one budget shared by every check, user checks placed in the
table, and the `review` / `review_off` settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.errors import ConfigError
from loopwright.events import Event, ReviewEvent, event_from_dict, event_to_dict
from loopwright.review import Check, ReviewView, Verdict, send_back
from loopwright.store import open_store
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)
SMALL = "qwen2.5-coder-0.5b"


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a text file."""
    return {"config.ini": "port = 8417\n"}.get(path, "no such file")


def make_agent(server: FakeModelServer, model: str = SMALL, *,
               events: list[Event] | None = None, **kw: Any) -> Agent:
    kw.setdefault("tools", [read_file])
    return Agent(model, base_url=server.base_url, api_key="k", api_mode="chat_completions",
                 stream=False, retry=FAST, max_turns=8,
                 callbacks=[events.append] if events is not None else [], **kw)


def reviews(events: list[Event]) -> list[ReviewEvent]:
    return [e for e in events if isinstance(e, ReviewEvent)]


TWICE = [call("read_file", {"path": "config.ini"}), call("read_file", {"path": "config.ini"})]


async def test_a_verdict_is_one_review_event_naming_check_verdict_reason_and_budget() -> None:
    events: list[Event] = []
    with FakeModelServer([Reply(tool_calls=TWICE), Reply("The port is 8417.")]) as server:
        result = await make_agent(server, events=events).run("Port in config.ini?")
    assert result.output == "The port is 8417."
    [event] = reviews(events)
    assert (event.check, event.verdict) == ("duplicate_calls", "skip_call")
    assert event.call_id == result.messages[2].tool_calls[1].id  # the copy
    assert "copy of call 1" in event.reason and event.budget_left == 2 and event.applied
    assert event_from_dict(json.loads(json.dumps(event_to_dict(event)))) == event


async def test_review_events_are_kept_in_the_session(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with FakeModelServer([Reply(tool_calls=TWICE), Reply("8417")]) as server:
        result = await make_agent(server, store=str(db)).run("Port in config.ini?")
    store = open_store(str(db))
    assert store is not None and result.session_id is not None
    stored = [e for e in await store.events(result.session_id) if e["type"] == "review"]
    await store.aclose()
    assert [(e["check"], e["verdict"]) for e in stored] == [("duplicate_calls", "skip_call")]


def test_review_events_are_lines_of_run_json(tmp_path: Path) -> None:
    (tmp_path / "config.ini").write_text("port = 8417\n")
    twice = [call("read_file", {"path": "config.ini"}), call("read_file", {"path": "config.ini"})]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOOPWRIGHT_", "XDG_", "OPENAI", "ANTHROPIC", "OPENROUTER"))}
    env["HOME"] = str(tmp_path)
    with FakeModelServer([Reply(tool_calls=twice), Reply("8417")]) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "loopwright", "run", "Port in config.ini?", "--json",
             "--model", "fake-model", "--base-url", server.base_url, "--workdir",
             str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
            stdin=subprocess.DEVNULL)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    found = [e for e in lines if e["type"] == "review"]
    assert [(e["check"], e["verdict"]) for e in found] == [("duplicate_calls", "skip_call")], (
        proc.stderr)


class SaysPlease(Check):
    """A user check: an answer without "please" goes back once."""

    name = "says_please"

    def __init__(self, position: str = "first") -> None:
        self.position = position
        self.asked = 0

    def for_run(self) -> Check:
        return SaysPlease(self.position)

    async def review(self, view: ReviewView) -> Verdict | None:
        if "please" in view.answer or self.asked:
            return None
        self.asked += 1
        return send_back("Say please.", "no please")


async def test_a_user_check_joins_the_table_at_its_position_and_shares_the_budget() -> None:
    events: list[Event] = []
    # the user check goes first; the copy of "Let me read config.ini now." (narration) then
    # uses the last unit of the budget; a third send-back is not allowed
    script = [Reply("Let me read config.ini now."), Reply("Let me read config.ini now."),
              Reply("I'll read the file now.")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, events=events, review_checks=[SaysPlease()],
                                  tools=[read_file], review=["auto", "narration"]).run("Hello?")
    assert result.output == "I'll read the file now."
    seen = [(e.check, e.verdict, e.budget_left, e.applied) for e in reviews(events)]
    assert seen == [("says_please", "send_back", 1, True), ("narration", "send_back", 0, True)]
    assert "Say please." in server.model_requests[1].raw_body.decode()


async def test_a_user_check_placed_after_a_built_in_one_runs_after_it() -> None:
    events: list[Event] = []
    script = [Reply("Let me read config.ini now."), Reply("Hello, please.")]
    with FakeModelServer(script) as server:
        await make_agent(server, events=events, review=["auto", "narration"],
                         review_checks=[SaysPlease("after:narration")]).run("Hello?")
    assert [e.check for e in reviews(events)] == ["narration"]


async def test_every_run_of_an_agent_starts_its_checks_afresh() -> None:
    # the plan is made once for the agent's settings; the narration check's one nudge a run
    # is each run's own, and a second agent with it off in the same process gets none
    script = [Reply("Let me read config.ini now."), Reply("8417")] * 2
    with FakeModelServer([*script, Reply("Let me read config.ini now.")]) as server:
        events: list[Event] = []
        agent = make_agent(server, events=events, review=["auto", "narration"])
        first = await agent.run("Port?")
        second = await agent.run("Port?")
        other: list[Event] = []
        third = await make_agent(server, events=other, review=["auto", "narration"],
                                 review_off=["narration"]).run("Port?")
    assert first.output == second.output == "8417"
    assert [e.check for e in reviews(events)] == ["narration", "narration"]
    assert third.output == "Let me read config.ini now." and not reviews(other)


async def test_a_spent_budget_lets_the_answer_through() -> None:
    events: list[Event] = []
    with FakeModelServer([Reply("Let me read config.ini now.")]) as server:
        result = await make_agent(server, events=events, review_budget=0).run("Hello?")
    assert result.output == "Let me read config.ini now." and not reviews(events)


@pytest.mark.parametrize("settings", [{"review": "off"}, {"review_off": ["narration"]},
                                      {"review": ["doom_loop"]}])
async def test_the_narration_check_can_be_turned_off(settings: dict[str, Any]) -> None:
    with FakeModelServer([Reply("Let me read config.ini now.")]) as server:
        result = await make_agent(server, **settings).run("Hello?")
    assert result.output == "Let me read config.ini now."


async def test_review_off_turns_off_the_structural_checks_too() -> None:
    events: list[Event] = []
    with FakeModelServer([Reply(tool_calls=TWICE), Reply("8417")]) as server:
        result = await make_agent(server, events=events, review="off").run("Port?")
    assert not reviews(events)
    assert [m.content for m in result.messages if m.role == "tool"] == ["port = 8417\n"] * 2


@pytest.mark.parametrize("settings", [{"review_off": ["narrate"]}, {"review": ["nope"]},
                                      {"review_checks": [SaysPlease("before:nothing")]}])
async def test_an_unknown_check_name_is_a_config_error(settings: dict[str, Any]) -> None:
    with FakeModelServer([Reply("x")], strict=False) as server, pytest.raises(ConfigError):
        await make_agent(server, **settings).run("Hello?")


class StopsAnswers(Check):
    name = "stops_answers"

    async def review(self, view: ReviewView) -> Verdict | None:
        return Verdict(kind="stop", reason="not for answers")


async def test_a_verdict_on_calls_given_to_an_answer_is_reported_not_applied() -> None:
    events: list[Event] = []
    with FakeModelServer([Reply("42")]) as server:
        result = await make_agent(server, events=events,
                                  review_checks=[StopsAnswers()]).run("Hello?")
    assert result.output == "42" and result.stop_reason == "completed"
    assert [(e.check, e.verdict, e.applied) for e in reviews(events)] == [
        ("stops_answers", "stop", False)]


async def test_a_runtime_note_is_marked_in_the_session(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with FakeModelServer([Reply("Let me read config.ini now."), Reply("8417")]) as server:
        result = await make_agent(server, store=str(db), review=["auto", "narration"]).run(
            "Port?")
    store = open_store(str(db))
    assert store is not None and result.session_id is not None
    stored = await store.load(result.session_id)
    await store.aclose()
    [note] = [m for m in stored if "runtime_note" in m.marks]
    assert note.role == "user" and note.content.startswith("You said you would use a tool")


class SeesCalls(Check):
    """A calls-stage user check that writes down the calls (and the whole reply's) it is shown."""

    name = "sees_calls"
    stage = "calls"

    def __init__(self, seen: list[tuple[list[str], list[str]]], position: str = "last") -> None:
        self.seen, self.position = seen, position

    async def review(self, view: ReviewView) -> None:
        self.seen.append(([c.id for c in view.calls], [c.id for c in view.reply_calls]))


async def test_a_call_an_earlier_check_stopped_is_not_shown_to_a_later_one() -> None:
    seen: list[tuple[list[str], list[str]]] = []
    script = [Reply(tool_calls=[call("read_file", {"path": "config.ini"}, id="c1"),
                                call("read_file", {"path": "config.ini"}, id="c2")]),
              Reply("8417")]
    with FakeModelServer(script) as server:
        await make_agent(server, review_checks=[SeesCalls(seen, "after:duplicate_calls")]
                         ).run("Port?")
    assert seen == [(["c1"], ["c1", "c2"])]


async def test_a_check_sees_every_call_when_none_was_stopped() -> None:
    seen: list[tuple[list[str], list[str]]] = []
    script = [Reply(tool_calls=[call("read_file", {"path": "config.ini"}, id="c1"),
                                call("read_file", {"path": "other.ini"}, id="c2")]),
              Reply("8417")]
    with FakeModelServer(script) as server:
        await make_agent(server, review_checks=[SeesCalls(seen, "first")]).run("Port?")
    assert seen == [(["c1", "c2"], ["c1", "c2"])]


async def test_copies_with_long_arguments_are_one_call_too() -> None:
    """Signatures of arguments over the remembered length are computed each time, the same
    way: two copies of a long call in one reply still run once."""
    events: list[Event] = []
    long_path = "d/" * 1_500 + "config.ini"
    script = [Reply(tool_calls=[call("read_file", {"path": long_path}),
                                call("read_file", {"path": long_path})]),
              Reply("done")]
    with FakeModelServer(script) as server:
        await make_agent(server, events=events).run("Read it.")
    assert [(e.check, e.verdict) for e in reviews(events)] == [("duplicate_calls", "skip_call")]


class RecordsResults(Check):
    """A call check that keeps its own record of what ran, as the doom loop does."""

    name = "records_results"
    stage = "calls"

    def __init__(self, told: list[tuple[str, str, bool]]) -> None:
        self.told = told

    def ran(self, call: Any, content: str, *, is_error: bool) -> None:
        self.told.append((call.name, content, is_error))


async def test_a_call_check_with_its_own_ran_is_told_every_result() -> None:
    """Only the checks that keep a record are told what ran; one whose class or object has
    its own `ran` is told every result (the stage skips only the no-op one)."""
    on_class: list[tuple[str, str, bool]] = []
    on_object: list[tuple[str, str, bool]] = []
    plain = SeesCalls([], "last")
    plain.name = "plain_calls"
    plain.ran = lambda call, content, *, is_error: on_object.append(  # type: ignore[method-assign]
        (call.name, content, is_error))
    script = [Reply(tool_calls=[call("read_file", {"path": "config.ini"})]),
              Reply(tool_calls=[call("read_file", {"path": "none.ini"})]), Reply("8417")]
    with FakeModelServer(script) as server:
        result = await make_agent(server, review_checks=[RecordsResults(on_class), plain]
                                  ).run("Port?")
    assert result.output == "8417"
    expected = [("read_file", "port = 8417\n", False), ("read_file", "no such file", False)]
    assert on_class == expected
    assert on_object == expected
