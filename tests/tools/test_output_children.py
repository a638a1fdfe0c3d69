"""The spill root's links: a sub-agent's name in the root leads to its directory inside its
parent's (builtin/delegate.py makes it). Cleaning removes a link only once it leads nowhere and
is old (a live child whose empty directory was cleaned keeps its place); a link that leads out
of the spill root is no spill directory: the output is not saved there."""

from __future__ import annotations

import os
from pathlib import Path

from loopwright import Agent, tool
from loopwright.endpoints.retry import RetryPolicy
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.tools.output import clean_spill_directory, session_spill_directory

FAST = RetryPolicy(base_delay=0.01, jitter=0)


def test_cleaning_removes_old_links_that_lead_nowhere_and_keeps_the_rest(tmp_path: Path
                                                                         ) -> None:
    (tmp_path / "s-parent" / "s-child").mkdir(parents=True)
    (tmp_path / "s-parent" / "s-child" / "out.txt").write_text("x")
    os.symlink(tmp_path / "s-parent" / "s-child", tmp_path / "s-child")
    os.symlink(tmp_path / "s-parent" / "s-gone", tmp_path / "s-old-gone")
    os.symlink(tmp_path / "s-parent" / "s-gone", tmp_path / "s-new-gone")
    os.utime(tmp_path / "s-old-gone", (0, 0), follow_symlinks=False)
    clean_spill_directory(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s-child", "s-new-gone", "s-parent"]
    assert (tmp_path / "s-child" / "out.txt").read_text() == "x"


async def test_a_link_out_of_the_spill_root_is_not_written_through(tmp_path: Path) -> None:
    @tool(read_only=True)
    def dump() -> str:
        """Return a long output."""
        return "x" * 50_000

    root, elsewhere = tmp_path / "cache" / "spill", tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, session_spill_directory(root, "s1"))
    script = [Reply(tool_calls=[call("dump", {})]), Reply("ok")]
    with FakeModelServer(replies=script) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k", tools=[dump], retry=FAST,
                      cache_dir=str(tmp_path / "cache"), session_id="s1", context_window=8_192)
        result = await agent.run("dump it")
    [seen] = [m.content for m in result.messages if m.role == "tool"]
    assert "could not be saved" in seen and "leads out of the spill root" in seen
    assert list(elsewhere.iterdir()) == []
