"""`loopwright mcp-server`: an agent as MCP tools, for other agents (over stdio or streamable HTTP).

Two tools: `start_task` runs a new task to the end and `continue_session` gives a stored session
another prompt; both return the answer with the session id, and report progress (each turn and
tool call) while they run when the client asked for progress. The agent is built exactly as
`loopwright run` builds one (config, trust, sandbox, policy, sessions saved) — except that nobody
is there to approve: a call that needs approval is denied unless the user configured it
(`--yes`, or allow rules in their config). Over HTTP the server requires the same bearer token as
`loopwright serve` (`serve/auth.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations

from loopwright.events import Event, ToolCallEvent, TurnStart

if TYPE_CHECKING:
    import socket

    from loopwright.agent import Agent

INVALID_PARAMS = -32602
MAX_BODY = 4 * 1024 * 1024
"""The largest request body `--http` reads (the MCP SDK's default, given to it explicitly so the
body deadline is sized for the same number); a larger one is answered 413."""

INSTRUCTIONS = (
    "loopwright runs an LLM agent loop with file, search and shell tools in its working "
    "directory. start_task gives it a task and returns its answer and a session_id; "
    "continue_session sends that session a follow-up.")


class AgentTools:
    """The agent behind the tools, built on first use (off the event loop)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = {k: v for k, v in options.items() if k not in ("approval", "clarify")}
        self._agent: Agent[Any, Any] | None = None
        self._lock = asyncio.Lock()

    async def agent(self) -> Agent[Any, Any]:
        async with self._lock:
            if self._agent is None:
                from loopwright.agent import Agent

                self._agent = await asyncio.to_thread(lambda: Agent(**self.options))
            return self._agent

    async def run(self, prompt: str, session_id: str, ctx: Context) -> dict[str, Any]:
        if not prompt.strip():
            raise MCPError(INVALID_PARAMS, "prompt is empty")
        agent = await self.agent()
        progress = _Progress(ctx, agent.settings.max_turns)
        handle = await agent.start(prompt, session_id=session_id, extra_callback=progress.see)
        try:
            result = await handle.task
        finally:
            handle.cancel()  # the client went away (the call was cancelled): so does the run
            await progress.aclose()
        return {"session_id": result.session_id or session_id, "answer": result.text,
                "stop_reason": result.stop_reason, "error": result.error, "turns": result.turns,
                "usage": result.usage.to_dict(), "cost": result.cost}

    async def known_session(self, session_id: str) -> bool:
        store = (await self.agent()).state_services.store
        return store is not None and await store.get(session_id) is not None

    async def aclose(self) -> None:
        if self._agent is not None:
            await self._agent.aclose()


class _Progress:
    """Turns and tool calls as MCP progress notifications, sent in order by one task."""

    def __init__(self, ctx: Context, total: int) -> None:
        self.ctx, self.total = ctx, total
        self.queue: asyncio.Queue[tuple[int, str] | None] = asyncio.Queue()
        self.turn = 0
        self.task = asyncio.create_task(self._send())

    def see(self, event: Event) -> None:
        if event.agent:
            return
        if isinstance(event, TurnStart):
            self.turn = event.turn
            self.queue.put_nowait((event.turn, f"turn {event.turn}"))
        elif isinstance(event, ToolCallEvent):
            self.queue.put_nowait((self.turn, f"tool {event.name}"))

    async def _send(self) -> None:
        while (item := await self.queue.get()) is not None:
            with contextlib.suppress(Exception):  # progress is a courtesy to the client
                await self.ctx.report_progress(item[0], self.total, item[1])

    async def aclose(self) -> None:
        self.queue.put_nowait(None)
        with contextlib.suppress(Exception):
            await self.task


def build_server(options: dict[str, Any]) -> tuple[MCPServer, AgentTools]:
    """The MCP server and the agent behind it; `options` are `Agent` keyword arguments."""
    from loopwright import __version__

    tools = AgentTools(options)
    server = MCPServer("loopwright", instructions=INSTRUCTIONS, version=__version__)
    acting = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True)

    @server.tool(annotations=acting)
    async def start_task(prompt: str, ctx: Context) -> dict[str, Any]:
        """Run a new task to the end; returns the answer and the session_id to continue it.

        Args:
            prompt: What the agent should do, in plain words.
        """
        return await tools.run(prompt, uuid.uuid4().hex, ctx)

    @server.tool(annotations=acting)
    async def continue_session(session_id: str, prompt: str, ctx: Context) -> dict[str, Any]:
        """Send a follow-up to a session start_task returned; returns the new answer.

        Args:
            session_id: The session_id a previous call returned.
            prompt: The follow-up.
        """
        if not await tools.known_session(session_id):
            raise MCPError(INVALID_PARAMS, f"unknown session {session_id!r}: use a session_id "
                           "that start_task returned")
        return await tools.run(prompt, session_id, ctx)

    return server, tools


async def serve(options: dict[str, Any], *, http: bool = False, host: str = "127.0.0.1",
                port: int = 8765, token: str | None = None,
                listening: socket.socket | None = None, slowest_link: int | None = None) -> None:
    """Serve until stdin closes (stdio) or the process is stopped (HTTP). `listening`: the HTTP
    server's socket, bound by the caller (else uvicorn binds `host`:`port`); `slowest_link`:
    bytes a second the body deadline allows the largest body (default: serve's, 8 KiB/s)."""
    server, tools = build_server(options)
    try:
        if not http:
            # shielded: a Ctrl-C cancels this coroutine at once, while the SDK's stdin reader
            # stays blocked in a thread that no cancel reaches (it ends at the next line)
            await asyncio.shield(server.run_stdio_async())
            return
        await _serve_http(server, host=host, port=port, token=token, listening=listening,
                          slowest_link=slowest_link)
    finally:
        await tools.aclose()


async def _serve_http(server: MCPServer, *, host: str, port: int, token: str | None,
                      listening: socket.socket | None, slowest_link: int | None) -> None:
    import sys

    import uvicorn

    from loopwright.serve.auth import TokenAuth, server_token, token_path
    from loopwright.serve.limits import SLOWEST_LINK, ConnectionLimits

    secret, created = server_token(host, token)
    if created:
        print(f"loopwright mcp-server: token written to {token_path()}", file=sys.stderr)
    app = TokenAuth(server.streamable_http_app(host=host, max_request_body_size=MAX_BODY), secret)
    # serve's limits: without them clients sending a request's head a byte a minute hold
    # every file descriptor the process has, and no MCP client gets in; the body deadline is
    # sized for this endpoint's largest body (4 MiB), not serve's (1 MB), which cut off a
    # body the endpoint accepts, sent over the slowest link serve allows for
    limits = ConnectionLimits.fitting(max_body=MAX_BODY, slowest_link=slowest_link or SLOWEST_LINK)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                            **limits.uvicorn_config())
    await uvicorn.Server(config).serve(sockets=[listening] if listening is not None else None)
