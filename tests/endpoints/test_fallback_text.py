"""A reply broken off mid-stream and answered anew (a fallback model, or a retry that differs)
reaches the text listeners from its start: what the broken reply left in a text filter (half a
call in prompt mode, half an output object) is dropped, not glued before the new reply."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, PartialOutput, StatusEvent, TextDelta
from loopwright.testing import FakeModelServer, Fault, Reply, call

TWO_TRIES = RetryPolicy(attempts=2, base_delay=0.01, jitter=0)


@tool(read_only=True)
def read_notes() -> str:
    """Read the notes."""
    return "hello"


def _texts(events: list[Event]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_prompt_mode_shows_the_fallbacks_reply_after_half_a_call(tmp_path: Path) -> None:
    half_call = Reply('I will read it.\n<tool_call>{"name": "read_notes", "arguments": {}}'
                      '</tool_call>', chunk_size=4)
    events: list[Event] = []
    with FakeModelServer([Fault.cut_stream(half_call, after_chunks=9), Fault.disconnect()]
                         ) as primary, \
            FakeModelServer([Reply("The backup answers: hello.")]) as backup:
        agent = Agent("m", base_url=primary.base_url, api_key="k", tools=[read_notes],
                      tool_call_format="prompt", retry=TWO_TRIES, callbacks=[events.append],
                      workdir=tmp_path, fallbacks=[{"model": "b", "base_url": backup.base_url}])
        result = await agent.run("what do the notes say?")
    assert result.output == "The backup answers: hello."
    assert [e.kind for e in events if isinstance(e, StatusEvent) and e.kind == "fallback"]
    shown = _texts(events)
    assert shown.endswith("The backup answers: hello.")  # was: swallowed by the held markup
    assert "<tool_call>" not in shown


async def test_prompt_mode_without_a_break_shows_text_and_hides_the_call(tmp_path: Path) -> None:
    events: list[Event] = []
    with FakeModelServer([
        Reply('I will read it.\n<tool_call>{"name": "read_notes", "arguments": {}}</tool_call>',
              chunk_size=4),
        Reply("They say hello."),
    ]) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[read_notes],
                      tool_call_format="prompt", callbacks=[events.append], workdir=tmp_path)
        result = await agent.run("what do the notes say?")
    assert result.output == "They say hello."
    shown = _texts(events)
    assert "<tool_call>" not in shown and shown.startswith("I will read it.")
    assert shown.endswith("They say hello.")


class Verdict(BaseModel):
    answer: str
    sure: bool


async def test_a_typed_outputs_partials_start_again_with_the_fallbacks_reply() -> None:
    events: list[Event] = []
    broken = Reply('{"answer": "from the primary, cut', chunk_size=5)
    with FakeModelServer([Fault.cut_stream(broken, after_chunks=5), Fault.disconnect()]
                         ) as primary, \
            FakeModelServer([Reply('{"answer": "backup", "sure": true}', chunk_size=5)]
                            ) as backup:
        agent = Agent("m", base_url=primary.base_url, api_key="k", output_type=Verdict,
                      output_mode="native", retry=TWO_TRIES, callbacks=[events.append],
                      fallbacks=[{"model": "b", "base_url": backup.base_url}])
        result = await agent.run("judge")
    assert result.output == Verdict(answer="backup", sure=True)
    after = [e.output for e in events if isinstance(e, PartialOutput)]
    answers = [p.answer for p in after if getattr(p, "answer", None)]
    assert answers and all(a.startswith("b") for a in answers[-3:])
    assert not any("primary" in a and "backup" in a for a in answers)


async def test_a_typed_outputs_partials_from_final_result_start_again_too() -> None:
    events: list[Event] = []
    broken = Reply(tool_calls=[call("final_result", {"answer": "from the primary, cut short",
                                                     "sure": False})], chunk_size=5)
    with FakeModelServer([Fault.cut_stream(broken, after_chunks=8), Fault.disconnect()]
                         ) as primary, \
            FakeModelServer([Reply(tool_calls=[call("final_result", {"answer": "backup",
                                                                     "sure": True})],
                                   chunk_size=5)]) as backup:
        agent = Agent("m", base_url=primary.base_url, api_key="k", output_type=Verdict,
                      output_mode="tool", retry=TWO_TRIES, callbacks=[events.append],
                      fallbacks=[{"model": "b", "base_url": backup.base_url}])
        result = await agent.run("judge")
    assert result.output == Verdict(answer="backup", sure=True)
    answers = [getattr(e.output, "answer", "") for e in events if isinstance(e, PartialOutput)]
    assert answers[-1] == "backup"
    assert not any("primary" in a and "backup" in a for a in answers)
