"""`bash`: run a shell command in the working directory, bounded in time and output.

The command runs in the run's OS sandbox (`loopwright.safety.sandbox`; the policy is the
`SANDBOX_SERVICE` of the context, else the default: workspace-write, no network) with a scrubbed
environment. Where the sandbox cannot be made, it fails closed: any command that could change
something needs the user's approval.

The command (bubblewrap included) runs in its own session (`start_new_session=True`), so that on
a timeout, a cancel (`Agent.cancel()` cancels the tool's task) or `ctx.cancelled` the whole
process group is killed, children included (in the sandbox, bubblewrap's PID namespace and
`--die-with-parent` take every process down with it). Output (stdout and stderr interleaved)
is kept as a head and a tail of bounded size while it streams, so a command printing gigabytes
costs no memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Annotated

from pydantic import Field

from loopwright.builtin.workspace import display_path, resolve_path, workspace_roots
from loopwright.builtin.workspace_scan import record_command_changes, scan_before_command
from loopwright.errors import ToolError
from loopwright.safety.egress import egress_for
from loopwright.safety.sandbox import (
    Launch,
    call_policy,
    context_policy,
    is_plainly_read_only,
    prepare_launch,
)
from loopwright.safety.sandbox.planted import put_back
from loopwright.safety.sandbox.supervisor import LIMIT_STATUS, REPORT_PREFIX
from loopwright.safety.sensitive import held_files
from loopwright.tools.base import ToolContext, tool

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
HEAD_BYTES = 16 * 1024
TAIL_BYTES = 16 * 1024
_KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL on a timeout
_DRAIN_GRACE = 1.0  # how long to keep reading after the shell exits (background children)


class BoundedOutput:
    """Keeps the first `head` and the last `tail` bytes of a stream, and counts the rest."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self._head_limit = head
        self._tail_limit = tail
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        while self._tail and self._tail_size - len(self._tail[0]) >= self._tail_limit:
            self._tail_size -= len(self._tail.popleft())

    def text(self) -> str:
        tail = b"".join(self._tail)[-self._tail_limit:] if self._tail else b""
        omitted = self.total - len(self._head) - len(tail)
        head_text = self._head.decode("utf-8", errors="replace")
        if omitted <= 0:
            return head_text + tail.decode("utf-8", errors="replace")
        return (f"{head_text}\n… [{omitted:,} bytes of output omitted] …\n"
                f"{tail.decode('utf-8', errors='replace')}")


@tool(core=True, tags={"shell"})
async def bash(
    command: str,
    ctx: ToolContext,
    timeout: Annotated[float, Field(gt=0, le=MAX_TIMEOUT)] = DEFAULT_TIMEOUT,
    cwd: str = ".",
) -> str:
    """Run a bash command and return its output (stdout and stderr together) and exit code.
    Runs in the working directory with no input; the process and its children are killed after
    `timeout` seconds. Long outputs keep their beginning and end. Prefer the file tools for
    reading, searching and editing files.

    Args:
        command: The command line, run with `bash -c`.
        timeout: Seconds before the command is killed (default 120, at most 600).
        cwd: Directory to run in, relative to the working directory.
    """
    directory = resolve_path(ctx, cwd)
    if not directory.is_dir():
        raise ToolError(f"{display_path(ctx, directory)} is not a directory.")
    # judged where its arguments really lead (symlinks followed): filesystem work, off the loop
    plain = await asyncio.to_thread(is_plainly_read_only, command, directory)
    launch = await _launch(ctx, command, directory, plain=plain)
    # files the command changes are shown as diffs, like the file tools' changes
    before = await scan_before_command(ctx) if _may_write(ctx, launch, plain) else None
    try:
        async with launch.staged():  # placeholders for protected paths exist only meanwhile
            process, output, outcome = await _execute(launch, directory, timeout, ctx)
    except ToolError:  # timed out: what it changed before it was killed is shown too
        if before is not None and not ctx.cancelled.is_set():
            await record_command_changes(ctx, before)
        raise
    if before is not None:
        await record_command_changes(ctx, before)
    if launch.repositories:
        launch.restored.extend(await _keep_if_asked_for(ctx, command, launch))
    for warning in launch.unchecked:  # protection switched off for a while: the user is told
        ctx.status("workspace_scan", warning, check="planted")
    text = "\n".join([output.text().rstrip("\n"), *launch.restored, *launch.unchecked]
                     ).strip("\n")
    if launch.sandboxed and process.returncode == LIMIT_STATUS and REPORT_PREFIX in text:
        raise ToolError(f"{text}\nThe sandbox stopped the command at one of its limits; do "
                        "the work in smaller steps (or ask the user to raise the limit).")
    note = "" if outcome == "exited" else (
        "\n[background processes still hold the output open; later output is not shown]")
    return f"{text or '(no output)'}{note}\n[exit code {process.returncode}]"


async def _keep_if_asked_for(ctx: ToolContext, command: str, launch: Launch) -> list[str]:
    """The repositories the command made were moved aside (`planted.py`): put back if a person
    says to keep them (`git init packages/foo`, asked for). `approve_all` / `--yes` does not
    answer, nor does anyone when no one is there: a model's command keeps none unasked."""
    approver = egress_for(ctx).approver  # the run's approval gate (egress asks through it too)
    if approver is None:
        return []
    made = "\n".join(f"  {display_path(ctx, moved.repository)}" for moved in launch.repositories)
    allowed, _ = await approver.ask_for_call(
        "bash: keep the git repositories a command made", f"{command}\nmade the repositories\n"
        f"{made}\nKeep them? git runs the hooks and core.fsmonitor of a repository's config "
        "outside the sandbox; if you did not ask for them, answer no (they stay moved aside).",
        ctx, tool="bash", why_asked="repositories the command made", blanket=False)
    if not allowed:
        return []
    return [await asyncio.to_thread(put_back, moved) for moved in launch.repositories]


async def _execute(launch: Launch, directory: Path, timeout: float, ctx: ToolContext
                   ) -> tuple[asyncio.subprocess.Process, BoundedOutput, str]:
    """Run the command to its end (or its timeout or cancel): the process, its output and how
    it ended ("exited" or "detached"); a timeout or cancel raises `ToolError`."""
    # Our own pipe rather than asyncio's PIPE: `Process.wait()` would otherwise wait for the
    # pipe to close, which a background child (`server &`) may never do.
    read_fd, write_fd = os.pipe()
    try:
        process = await _start(launch, directory, write_fd)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    output = BoundedOutput()
    pump = asyncio.ensure_future(_pump(read_fd, output))
    try:
        outcome = await _wait(process, pump, timeout, ctx.cancelled)
    except BaseException:
        await _kill_group(process, grace=0.0)
        raise
    finally:
        pump.cancel()
        await asyncio.wait({pump})  # its reader is removed before the descriptor is closed
        os.close(read_fd)
    if outcome == "timeout":
        await _kill_group(process, grace=_KILL_GRACE)
        raise ToolError(f"the command timed out after {timeout:g}s and was killed "
                        f"(with its child processes). Output so far:\n{output.text()}")
    if outcome == "cancelled":
        await _kill_group(process, grace=0.0)
        raise ToolError("the command was cancelled and killed.")
    return process, output, outcome


def _may_write(ctx: ToolContext, launch: Launch, plain: bool) -> bool:
    """Whether the command could change workspace files (else no scan is needed); `plain`: it
    is plainly read-only."""
    if plain:
        return False
    return not launch.sandboxed or context_policy(ctx.services).writes_workspace


async def _launch(ctx: ToolContext, command: str, directory: Path, *, plain: bool) -> Launch:
    """What to start; without a sandbox, approval for anything not `plain` (plainly
    read-only)."""
    policy = call_policy(ctx)
    held = held_files(ctx)  # the scripts the user's hooks and MCP servers run
    if held:
        policy = replace(policy, held_files=tuple(str(path) for path in held))
    launch = await prepare_launch(policy, ["/bin/bash", "-c", command], cwd=directory,
                                  roots=workspace_roots(ctx))
    if launch.sandboxed or not launch.problem or plain:
        return launch
    if await ctx.approve("bash: run without a sandbox", f"{command}\n(no sandbox: "
                         f"{launch.problem})"):
        return launch
    raise ToolError(
        f"no sandbox is available ({launch.problem}), so this command needs the user's approval, "
        "which was not given. Use the file tools, or ask the user to run it.")


async def _start(launch: Launch, directory: Path, output_fd: int
                 ) -> asyncio.subprocess.Process:
    """Start the command in a session of its own. A cancel that arrives while it starts still
    kills the whole process group once it exists: asyncio alone would kill only the outermost
    process (bubblewrap), and the sandbox's init could survive it."""
    starting = asyncio.ensure_future(asyncio.create_subprocess_exec(
        *launch.argv, cwd=directory, env=launch.env,
        stdin=asyncio.subprocess.DEVNULL, stdout=output_fd, stderr=output_fd,
        start_new_session=True))
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await _kill_group(await starting, grace=0.0)
        raise


async def _pump(fd: int, output: BoundedOutput) -> None:
    """Read `fd` into `output` until end of file."""
    loop = asyncio.get_running_loop()
    os.set_blocking(fd, False)
    eof: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if chunk:
            output.add(chunk)
        elif not eof.done():
            eof.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await eof
    finally:
        loop.remove_reader(fd)


async def _wait(process: asyncio.subprocess.Process, pump: asyncio.Future[None], timeout: float,
                cancelled: asyncio.Event) -> str:
    """"exited", "detached" (shell exited, output still held open), "timeout" or "cancelled"."""
    exited = asyncio.ensure_future(process.wait())
    stop = asyncio.ensure_future(cancelled.wait())
    try:
        done, _ = await asyncio.wait({exited, stop}, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        if stop in done:
            return "cancelled"
        if exited not in done:
            return "timeout"
        try:
            await asyncio.wait_for(asyncio.shield(pump), _DRAIN_GRACE)
        except TimeoutError:
            return "detached"
        return "exited"
    finally:
        for waiter in (exited, stop):
            waiter.cancel()


async def _kill_group(process: asyncio.subprocess.Process, *, grace: float) -> None:
    """Terminate the command's process group (politely first if `grace`) and reap the shell."""
    signals = (signal.SIGTERM, signal.SIGKILL) if grace > 0 else (signal.SIGKILL,)
    for sig in signals:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        if process.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), grace or 5.0)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)  # children that outlived the shell
