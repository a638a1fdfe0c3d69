"""Turn diffs: a `turn_diff` status after each turn that changed files, the total on the result."""

from __future__ import annotations

from pathlib import Path

from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.endpoints.retry import RetryPolicy
from loopwright.events import Event, StatusEvent
from loopwright.testing import FakeModelServer, Reply, call

FAST = RetryPolicy(base_delay=0.01, jitter=0)


def diff_events(events: list[Event]) -> list[StatusEvent]:
    return [e for e in events if isinstance(e, StatusEvent) and e.kind == "turn_diff"]


async def test_each_changing_turn_reports_its_diff_and_the_result_has_the_total(
        tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\ny = 2\n")
    events: list[Event] = []
    script = [
        Reply(tool_calls=[call("write_file", {"path": "new.txt", "content": "hello\n"}),
                          call("edit_file", {"path": "app.py", "old_string": "x = 1",
                                             "new_string": "x = 10"})]),
        Reply(tool_calls=[call("read_file", {"path": "app.py"})]),
        Reply(tool_calls=[call("edit_file", {"path": "app.py", "old_string": "y = 2",
                                             "new_string": "y = 20\nz = 3"})]),
        Reply(text="done"),
    ]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(tmp_path), callbacks=[events.append])
        result = await agent.run("change things")
    assert result.stop_reason == "completed"
    first, second = diff_events(events)  # the read-only turn reports nothing
    assert first.message == "turn changed 2 files (+2/−1)"
    assert first.data["files"] == ["app.py", "new.txt"]
    assert "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n" in first.data["diff"]
    assert "-x = 1\n+x = 10\n" in first.data["diff"]
    assert second.message == "turn changed 1 file (+2/−1)"
    assert "-y = 2\n+y = 20\n+z = 3\n" in second.data["diff"]
    assert "+x = 10" not in second.data["diff"]  # only this turn's change
    assert "--- a/app.py\n+++ b/app.py" in result.diff
    assert "-x = 1\n-y = 2\n+x = 10\n+y = 20\n+z = 3\n" in result.diff
    assert "+hello\n" in result.diff


async def test_the_diff_status_comes_before_its_turn_end(tmp_path: Path) -> None:
    events: list[Event] = []
    script = [Reply(tool_calls=[call("write_file", {"path": "a.txt", "content": "a\n"})]),
              Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(tmp_path), callbacks=[events.append])
        await agent.run("write")
    kinds = [e.type if not isinstance(e, StatusEvent) else e.kind for e in events]
    assert kinds.index("tool_result") < kinds.index("turn_diff") < kinds.index("turn_end")


async def test_writing_identical_content_reports_no_change(tmp_path: Path) -> None:
    (tmp_path / "same.txt").write_text("same\n")
    events: list[Event] = []
    script = [Reply(tool_calls=[call("write_file", {"path": "same.txt", "content": "same\n"})]),
              Reply(text="ok")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", retry=FAST,
                      tools=default_tools(), workdir=str(tmp_path), callbacks=[events.append])
        result = await agent.run("rewrite")
    assert diff_events(events) == [] and result.diff == ""
