"""The built-in tools that change files record what they are about to write before they write, so
a run resumed after a kill tells the model whether the cut-off call took effect; a tool that
records nothing is reported as unknown."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from store_helpers import note_on_resume

from loopwright.builtin import default_tools
from loopwright.interrupted import INTERRUPTED_RESULT
from loopwright.testing import FakeModelServer, Reply, call

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")

CHILD = '''
import asyncio, sys, time
from pathlib import Path
from loopwright import Agent
from loopwright.builtin import default_tools
from loopwright.hooks import Hooks

base_url, db, workdir, marker = sys.argv[1:5]

def stop_here(call):
    Path(marker).write_text("written")
    time.sleep(60)  # killed here: the tool has written, its result is not stored yet

agent = Agent("test-model", base_url=base_url, api_key="k", store=db, session_id="files",
              workdir=workdir, tools=default_tools(names=["write_file", "edit_file",
                                                          "apply_patch"]),
              hooks=Hooks(after_tool=[stop_here]))
asyncio.run(agent.run("Change the notes."))
'''

PATCH = """--- a/notes.txt
+++ b/notes.txt
@@ -1,2 +1,2 @@
 alpha
-beta
+gamma
"""


def killed_after(tmp_path: Path, tool_call: Any) -> Path:
    """The workspace after a child wrote with `tool_call` and was killed before its result was
    stored."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("alpha\nbeta\n")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    marker = tmp_path / "marker"
    with FakeModelServer([Reply(tool_calls=[tool_call])]) as server:
        child = subprocess.Popen([sys.executable, str(script), server.base_url,
                                  str(tmp_path / "s.db"), str(work), str(marker)],
                                 text=True, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the child never wrote"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
    return work


WRITES = {
    "write_file": call("write_file", {"path": "notes.txt", "content": "alpha\ngamma\n"}),
    "edit_file": call("edit_file", {"path": "notes.txt", "old_string": "beta",
                                    "new_string": "gamma"}),
    "apply_patch": call("apply_patch", {"patch": PATCH}),
}


@pytest.mark.parametrize("tool_name", sorted(WRITES))
async def test_a_write_that_landed_is_reported_as_done(tmp_path: Path, tool_name: str) -> None:
    work = killed_after(tmp_path, WRITES[tool_name])
    assert (work / "notes.txt").read_text() == "alpha\ngamma\n"
    note = await note_on_resume(tmp_path, work, "files")
    assert "It took effect" in note and "notes.txt" in note and "do not make it again" in note


async def test_a_write_that_did_not_land_is_reported_as_not_done(tmp_path: Path) -> None:
    work = killed_after(tmp_path, WRITES["write_file"])
    (work / "notes.txt").write_text("alpha\nbeta\n")  # as if the kill came before the write
    note = await note_on_resume(tmp_path, work, "files")
    assert "It did not take effect" in note


async def test_a_file_changed_since_is_reported_as_uncertain(tmp_path: Path) -> None:
    work = killed_after(tmp_path, WRITES["write_file"])
    (work / "notes.txt").write_text("someone else's text\n")
    note = await note_on_resume(tmp_path, work, "files")
    assert "may have taken effect in part" in note and "changed since" in note


def test_a_tool_that_records_nothing_is_reported_as_unknown() -> None:
    from loopwright.tools.effects import effect_note

    # bash, and every tool without a record
    assert effect_note(None, Path.cwd()) == INTERRUPTED_RESULT
    assert "may or may not have taken effect" in INTERRUPTED_RESULT
    assert "bash" in {t.name for t in default_tools()}
