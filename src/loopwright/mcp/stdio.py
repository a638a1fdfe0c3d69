"""The stdio transport to an MCP server, with one message bounded.

Not the SDK's `mcp.client.stdio.stdio_client`: it joins a line's chunks as `buffer + chunk`,
with no bound (quadratic in the line's length), and it makes the process and reads its stdout
inside itself, so nothing can be configured or wrapped to stop a server that writes one 100 MB
line: the client held ~450 MB until `call_timeout`. This follows its shape — the SDK's default
environment, a process group of its own, a reader and a writer task, and on close: stdin
closed, a grace period, then the group killed — with a reader that splits bytes as they come and
stops at `limit`. A message over it ends the connection (the session's waiting calls see it
closed) after `on_too_large` is told, so the client can name the cause.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, TextIO

import anyio

from loopwright.worker_threads import run_in_thread

if TYPE_CHECKING:
    from anyio.abc import Process
    from mcp.client._transport import TransportStreams
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.message import SessionMessage

_EXIT_GRACE = 2.0  # for the server to exit on its own once its stdin is closed (the SDK's)
_KILL_GRACE = 2.0  # between SIGTERM and SIGKILL to the server's process group (the SDK's)
_CLOSE_GRACE = 2.0  # to close the pipes once it is dead (a grandchild may hold them)
_OFF_LOOP_PARSE = 256 * 1024  # bytes of JSON (~1 ms to parse): a longer line parses in a thread


class MessageTooLarge(Exception):
    """The server wrote one message over the limit (`size` bytes read of it so far)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"a message of over {limit:,} bytes ({size:,} read)")
        self.size = size
        self.limit = limit


class LineSplitter:
    """Newline-delimited messages out of a byte stream's chunks, each line at most `limit`
    bytes: `feed` costs time in the chunk's size, not the line's so far, and holds at most
    `limit` bytes and a chunk."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._pending = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines `chunk` completes; raises `MessageTooLarge` for one over the limit."""
        pending = self._pending
        searched = len(pending)  # the bytes before hold no newline
        pending += chunk
        lines: list[bytes] = []
        start = 0
        while (end := pending.find(b"\n", searched)) >= 0:
            if end - start > self.limit:
                raise MessageTooLarge(end - start, self.limit)
            lines.append(bytes(pending[start:end]))
            start = searched = end + 1
        del pending[:start]
        if len(pending) > self.limit:
            raise MessageTooLarge(len(pending), self.limit)
        return lines


def parse_message(line: bytes) -> SessionMessage | Exception:
    """One line as a JSON-RPC message, or the error for the session to drop (as the SDK does
    with a line that is not JSON-RPC: a server's stray output)."""
    import mcp_types
    from mcp.shared.message import SessionMessage

    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line,
                                                                              by_name=False))
    except ValueError as exc:
        return exc


async def _parsed(line: bytes) -> SessionMessage | Exception:
    if len(line) < _OFF_LOOP_PARSE:
        return parse_message(line)
    parsed: SessionMessage | Exception = await run_in_thread(
        functools.partial(parse_message, line))
    return parsed


class Pipes:
    """The two tasks between the server's pipes and the session's streams."""

    def __init__(self, process: Process, lines: LineSplitter,
                 on_too_large: Callable[[MessageTooLarge], None]) -> None:
        from mcp.shared.message import SessionMessage

        self.process = process
        self.lines = lines
        self.on_too_large = on_too_large
        self.too_large = False
        self.to_session, self.from_server = \
            anyio.create_memory_object_stream[SessionMessage | Exception](0)
        self.to_server, self.from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_stdout(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        gone = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
        async with self.to_session:  # its close is the session's end of the connection
            try:
                async for chunk in stdout:
                    for line in self.lines.feed(chunk):
                        await self.to_session.send(await _parsed(line))
                return
            except MessageTooLarge as exc:
                self.too_large = True
                self.on_too_large(exc)  # before the session sees the connection end
                return
            except gone:
                pass  # the session closed: read on below, or stop() closed the pipe
        # a server blocked writing to a full pipe could not exit when its stdin closes
        with contextlib.suppress(*gone):
            async for _ in stdout:
                pass

    async def write_stdin(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            async with self.from_session:
                async for message in self.from_session:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(f"{text}\n".encode())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            # the server may live on: the session must see the connection end, not wait
            await self.to_session.aclose()

    async def close_streams(self) -> None:
        for stream in (self.from_server, self.to_server):
            await stream.aclose()


@contextlib.asynccontextmanager
async def bounded_stdio_client(params: StdioServerParameters, *, errlog: TextIO, limit: int,
                               on_too_large: Callable[[MessageTooLarge], None]
                               ) -> AsyncIterator[TransportStreams]:
    """Start the server and yield the session's (read, write) streams, as `stdio_client`."""
    if sys.platform == "win32":  # no process groups to kill: the SDK's own, unbounded
        from mcp.client.stdio import stdio_client

        async with stdio_client(params, errlog=errlog) as streams:
            yield streams
        return
    from mcp.client.stdio import get_default_environment

    process = await anyio.open_process(
        [params.command, *params.args], env=get_default_environment() | (params.env or {}),
        stderr=errlog, cwd=params.cwd, start_new_session=True)
    pipes = Pipes(process, LineSplitter(limit), on_too_large)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(pipes.read_stdout)
        tasks.start_soon(pipes.write_stdin)
        try:
            yield pipes.from_server, pipes.to_server
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled caller must not leak the server
                await pipes.close_streams()
                await stop(process, grace=0 if pipes.too_large else _EXIT_GRACE)
            tasks.cancel_scope.cancel()


async def stop(process: Process, *, grace: float) -> None:
    """Close the server's stdin, give it `grace` seconds to exit, then kill its group."""
    from mcp.os.posix.utilities import terminate_posix_process_tree

    closed = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)
    if process.stdin is not None:
        with contextlib.suppress(*closed):
            await process.stdin.aclose()
    with anyio.move_on_after(grace):
        while process.returncode is None:  # not wait(): it waits for the pipes' EOF too
            await anyio.sleep(0.01)
    if process.returncode is None:
        await terminate_posix_process_tree(process, _KILL_GRACE)
    with anyio.move_on_after(_CLOSE_GRACE), contextlib.suppress(*closed):
        await process.aclose()
