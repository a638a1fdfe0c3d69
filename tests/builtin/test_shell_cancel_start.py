"""A cancel that lands while `bash` is still starting its process must kill everything it
started: asyncio alone kills only the outermost process (bubblewrap), and the sandbox's init then
lived on with its command. Swept over every event-loop step of the start."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from pathlib import Path

import pytest

from loopwright import ToolContext, ToolError
from loopwright.builtin import bash
from loopwright.safety.sandbox import SANDBOX_SERVICE, SandboxPolicy
from shared_helpers import TAG, live_processes, require_component, wait_until


@pytest.mark.parametrize("mode", ["workspace-write", "full-access"])
async def test_a_cancel_at_any_step_of_the_start_leaves_no_process(tmp_path: Path,
                                                                   mode: str) -> None:
    if mode != "full-access":
        require_component(shutil.which("bwrap") is not None,
                          "bubblewrap is needed to build the sandbox: apt-get install bubblewrap")
    ctx = ToolContext(workdir=tmp_path, services={SANDBOX_SERVICE: SandboxPolicy(mode=mode)})
    for steps in range(30):
        marker = f"sleep {TAG}{steps:03d}7"
        task = asyncio.ensure_future(bash.invoke(bash.validate({"command": marker}), ctx))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, ToolError):
            await task
        await wait_until(lambda m=marker: not live_processes(m),  # type: ignore[misc]
                         f"nothing of {marker!r} outlives a cancel after {steps} steps", 10.0)
