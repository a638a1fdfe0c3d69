"""MCP client on the official `mcp` SDK: one connection per configured server, its tools as
loopwright `Tool`s named `mcp__{server}__{tool}`.

Lifecycle: servers are connected when the first run starts (`MCPToolsPlugin`), or on first use,
and closed by `Agent.aclose()` / `async with Agent(...)`. A closed manager reconnects on the next
run, so one `Agent` can be used from several event loops in turn (`Agent.chat`).

Each connection is owned by one background task that holds the SDK client's `async with` open
(anyio requires entering and leaving it in the same task); tool calls from any task use it.
A server whose connection dies (a crashed stdio process, a dropped HTTP session) is restarted
`max_restarts` times (default once); after that its tools answer with a clear error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from loopwright.errors import ToolError
from loopwright.mcp.config import MCPServerConfig, parse_servers, tool_name
from loopwright.mcp.content import result_text
from loopwright.mcp.stdio import MessageTooLarge, bounded_stdio_client
from loopwright.mcp.vetting import MAX_TOOLS, vet_tools
from loopwright.plugins import LoopPlugin
from loopwright.safety.sensitive import SERVER_SCRIPTS_STATE
from loopwright.tools.base import Tool, ToolContext
from loopwright.tools.schema import clean_schema

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import CallToolResult
    from mcp_types import Tool as RemoteTool

    from loopwright.events import StatusKind
    from loopwright.plugins import RunView
    from loopwright.tools.registry import ToolRegistry

logger = logging.getLogger("loopwright.mcp")

StatusCallback = Callable[["StatusKind", str, dict[str, Any]], None]  # as RunView.status
_SHUTDOWN_GRACE = 10.0
_LOG_TAIL = 600
_PING_TIMEOUT = 5.0
_MAX_SERVER_TEXT = 2_000  # of an error message a server wrote, in errors and status events


class MCPServerError(ToolError):
    """An MCP server could not be reached, crashed, timed out or answered with a protocol error.

    A `ToolError`, so inside a run it becomes an error result the model reads, never a crash."""


class _ConnectionLost(Exception):
    """Internal: the transport under a call died; the caller may restart the server."""


class _Link:
    """One generation of a connection: the task owning the SDK client and its stop signal."""

    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self.task: asyncio.Task[None] | None = None
        self.errlog: TextIO | None = None
        self.too_large: MessageTooLarge | None = None  # what ended it, when the server did so


class MCPConnection:
    """One MCP server: connect, list tools, call tools, restart after a crash, close."""

    def __init__(self, config: MCPServerConfig, *, log_dir: Path | None = None) -> None:
        self.config = config
        self.log_dir = log_dir
        self.remote_tools: list[RemoteTool] = []
        self.notes: list[str] = []  # the server's tools left out, and why (see `vetting`)
        self.restarts = 0
        self.error: str | None = None  # set when the server is down for good (until close)
        self._link: _Link | None = None
        self._generation = 0
        self._lock: asyncio.Lock | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def connected(self) -> bool:
        link = self._link
        return link is not None and link.ready.done() and not link.ready.exception() \
            and link.task is not None and not link.task.done()

    @property
    def log_path(self) -> Path | None:
        if self.log_dir is None or self.config.transport != "stdio":
            return None
        return self.log_dir / f"{self.name}.log"

    def _guard(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def connect(self) -> None:
        """Start (or reach) the server and list its tools; raises `MCPServerError`."""
        async with self._guard():
            if self.connected:
                return
            if self.error is not None:
                raise MCPServerError(self.error)
            try:
                client = await self._open()
                self.remote_tools, self.notes = vet_tools(self.name,
                                                          await self._list_tools(client))
            except MCPServerError as exc:
                self.error = str(exc)
                await self._shutdown()
                raise

    async def call_tool(self, tool: str, arguments: dict[str, Any], *,
                        notify: StatusCallback | None = None) -> CallToolResult:
        """Call one tool; a dead connection is restarted (within `max_restarts`) and the call
        retried once. Protocol errors, timeouts and a server that stays down raise
        `MCPServerError`; a tool's own failure is a result with `is_error` set."""
        client, generation = await self._current()
        link = self._link
        try:
            return await self._call(client, tool, arguments)
        except _ConnectionLost as lost:
            if link is not None and link.too_large is not None:
                raise await self._broke_off(generation, link.too_large, tool, notify) from None
            client = await self._restart(generation, str(lost), notify)
        link = self._link
        try:
            return await self._call(client, tool, arguments)
        except _ConnectionLost as lost:
            if link is not None and link.too_large is not None:
                raise await self._broke_off(self._generation, link.too_large, tool,
                                            notify) from None
            raise MCPServerError(f"MCP server {self.name!r} lost the connection again right after "
                                 f"a restart: {lost}{self._log_hint()}") from None

    async def close(self) -> None:
        """Stop the server (stdio) or end the session (HTTP). The connection may be reopened."""
        async with self._guard():
            await self._shutdown()
        self.error = None
        self.restarts = 0
        self._lock = None  # the next use may be on another event loop

    # -- internals --

    async def _current(self) -> tuple[Client, int]:
        if not self.connected:
            if self.error is not None:
                raise MCPServerError(self.error)
            if self._link is None:
                await self.connect()
            elif self._guard().locked():  # a (re)connect is under way: wait for its outcome
                await self._await_reconnect()
        link = self._link
        if link is None or not link.ready.done() or link.ready.exception():
            raise MCPServerError(self.error or f"MCP server {self.name!r} is not connected")
        return link.ready.result(), self._generation

    async def _await_reconnect(self) -> None:
        """Wait, within the server's connect timeout (plus the time to stop the dead process),
        for the connect or restart in progress; its failure is this call's failure."""
        limit = self.config.connect_timeout + 2 * _SHUTDOWN_GRACE
        try:
            async with asyncio.timeout(limit):
                async with self._guard():
                    pass
        except TimeoutError:
            raise MCPServerError(f"MCP server {self.name!r} did not come back within "
                                 f"{limit:g}s{self._log_hint()}") from None
        if self.error is not None:
            raise MCPServerError(self.error)

    async def _open(self) -> Client:
        link = _Link()
        self._link = link
        self._generation += 1
        link.task = asyncio.ensure_future(self._own(link))
        timeout = self.config.connect_timeout
        try:
            return await asyncio.wait_for(asyncio.shield(link.ready), timeout)
        except TimeoutError:
            raise MCPServerError(
                f"MCP server {self.name!r} ({self.config.target}) did not complete the MCP "
                f"handshake within {timeout:g}s{self._log_hint()}") from None
        except (asyncio.CancelledError, MCPServerError):
            raise
        except Exception as exc:
            if link.too_large is not None:
                raise MCPServerError(self._too_large_text(link.too_large)) from None
            raise MCPServerError(
                f"cannot connect to MCP server {self.name!r} ({self.config.target}): "
                f"{describe_error(exc)}{self._log_hint()}") from exc
        finally:
            if not link.ready.done() or link.ready.exception():
                await self._shutdown()

    async def _own(self, link: _Link) -> None:
        from mcp import Client

        try:
            async with Client(self._transport(link)) as client:
                if not link.ready.done():
                    link.ready.set_result(client)
                await link.stop.wait()
        except asyncio.CancelledError:
            if not link.ready.done():
                link.ready.set_exception(
                    MCPServerError(f"connecting to {self.name!r} was cancelled"))
            raise
        except BaseException as exc:
            if not link.ready.done():
                link.ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(exc))
            else:
                logger.debug("MCP server %r: closing failed: %s", self.name, describe_error(exc))
            if not isinstance(exc, Exception):
                raise
        finally:
            if link.errlog is not None:
                link.errlog.close()

    def _transport(self, link: _Link) -> Any:
        cfg = self.config
        if cfg.command:
            from mcp.client.stdio import StdioServerParameters

            def too_large(exc: MessageTooLarge) -> None:
                link.too_large = exc

            params = StdioServerParameters(command=cfg.command, args=cfg.args,
                                           env=cfg.env or None, cwd=cfg.cwd)
            link.errlog = self._open_errlog()
            return bounded_stdio_client(params, errlog=link.errlog or sys.stderr,
                                        limit=cfg.max_message_bytes, on_too_large=too_large)
        from loopwright.mcp.http import http_transport  # httpx2: for HTTP servers alone

        return http_transport(cfg)

    def _open_errlog(self) -> TextIO | None:
        path = self.log_path
        if path is None:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # a fresh log per connection; a restart appends, so the crash output stays visible
            return path.open("a" if self.restarts else "w", encoding="utf-8")
        except OSError:
            return None

    async def _list_tools(self, client: Client) -> list[RemoteTool]:
        tools: list[RemoteTool] = []
        cursor: str | None = None
        wanted = self.config.tools
        try:
            for _ in range(100):  # a paginator that never ends cannot hang the connect
                page = await asyncio.wait_for(client.list_tools(cursor=cursor),
                                              self.config.connect_timeout)
                tools.extend(t for t in page.tools if wanted is None or t.name in wanted)
                cursor = page.next_cursor
                if not cursor or len(tools) > MAX_TOOLS:  # more pages would all be left out
                    break
        except TimeoutError:
            raise MCPServerError(f"MCP server {self.name!r} did not list its tools within "
                                 f"{self.config.connect_timeout:g}s") from None
        except Exception as exc:
            link = self._link
            cause = describe_error(exc) if link is None or link.too_large is None \
                else self._too_large_text(link.too_large)
            raise MCPServerError(f"MCP server {self.name!r} failed to list its tools: "
                                 f"{cause}") from exc
        return tools

    async def _call(self, client: Client, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        timeout = self.config.call_timeout
        try:
            # the outer bound is a safety net: the SDK's own read timeout normally fires first
            return await asyncio.wait_for(
                client.call_tool(tool, arguments, read_timeout_seconds=timeout), timeout + 5)
        except MCPError as exc:
            # JSON-RPC leaves -32000 to servers too: only a server that no longer answers a
            # ping is gone (restarting one that is not would run the call a second time)
            if exc.code == CONNECTION_CLOSED and not await self._answers_ping(client):
                raise _ConnectionLost(cut(exc.message)) from exc
            if exc.code == REQUEST_TIMEOUT:
                raise MCPServerError(f"{tool!r} on MCP server {self.name!r} timed out after "
                                     f"{timeout:g}s") from None
            raise MCPServerError(f"MCP server {self.name!r} answered {tool!r} with JSON-RPC error "
                                 f"{exc.code}: {cut(exc.message)}") from None
        except TimeoutError:
            raise MCPServerError(f"{tool!r} on MCP server {self.name!r} timed out after "
                                 f"{timeout:g}s") from None
        except Exception as exc:
            if _is_transport_failure(exc):
                raise _ConnectionLost(describe_error(exc)) from exc
            raise MCPServerError(f"calling {tool!r} on MCP server {self.name!r} failed: "
                                 f"{describe_error(exc)}") from exc

    async def _answers_ping(self, client: Client) -> bool:
        """Whether the server still answers: a ping, or the error a server gives for a method
        it no longer has (ping is gone from the 2026 protocol), both prove it."""
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        try:
            await asyncio.wait_for(client.session.send_ping(),
                                   min(_PING_TIMEOUT, self.config.connect_timeout))
        except MCPError as exc:
            return exc.code != CONNECTION_CLOSED
        except Exception:
            return False
        return True

    def _too_large_text(self, exc: MessageTooLarge) -> str:
        return (f"MCP server {self.name!r} sent {exc} (the limit is mcp_servers.{self.name}."
                f"max_message_mb = {self.config.max_message_mb:g})")

    async def _broke_off(self, generation: int, exc: MessageTooLarge, tool: str,
                         notify: StatusCallback | None) -> MCPServerError:
        """The error for a call whose server sent a message over the limit: the connection is
        gone, so the server is restarted as after a crash (or reported down), but the call is
        not sent again: the server may have run it already."""
        text = self._too_large_text(exc)
        with contextlib.suppress(MCPServerError):  # down for good: the next call says so
            await self._restart(generation, text, notify)
        return MCPServerError(f"{text}; {tool!r} was stopped and its answer dropped")

    async def _restart(self, generation: int, reason: str,
                       notify: StatusCallback | None) -> Client:
        async with self._guard():
            if generation != self._generation and self.connected and self._link is not None:
                return self._link.ready.result()  # a concurrent call already restarted it
            if self.error is not None:
                raise MCPServerError(self.error)
            limit = self.config.max_restarts
            if self.restarts >= limit:
                self.error = (f"MCP server {self.name!r} stopped ({reason}) after {limit} "
                              f"restart(s); its tools are unavailable{self._log_hint()}")
                await self._shutdown()
                raise MCPServerError(self.error)
            self.restarts += 1
            if notify is not None:
                notify("mcp_restart", f"MCP server {self.name!r} stopped ({reason}); restarting it "
                       f"({self.restarts} of {limit})",
                       {"server": self.name, "restarts": self.restarts})
            await self._shutdown()
            try:
                return await self._open()
            except MCPServerError as exc:
                self.error = f"MCP server {self.name!r} could not be restarted: {exc}"
                raise MCPServerError(self.error) from None

    async def _shutdown(self) -> None:
        link, self._link = self._link, None
        if link is None or link.task is None:
            return
        link.stop.set()
        if not link.ready.done():  # still in the handshake: nothing will look at `stop`
            link.task.cancel()
        done, _ = await asyncio.wait({link.task}, timeout=_SHUTDOWN_GRACE)
        if not done:
            link.task.cancel()
            await asyncio.wait({link.task}, timeout=_SHUTDOWN_GRACE)
        if link.ready.done() and not link.ready.cancelled():
            link.ready.exception()  # mark a connect failure as seen: nobody else will read it

    def _log_hint(self) -> str:
        path = self.log_path
        if path is None or not path.is_file():
            return ""
        try:
            with path.open("rb") as handle:
                handle.seek(max(0, path.stat().st_size - _LOG_TAIL))
                tail = handle.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
        if not tail:
            return f" (server log: {path})"
        return f". Server log {path} ends with:\n{tail}"


class MCPManager:
    """Every configured MCP server of one agent, and their tools."""

    def __init__(self, servers: Mapping[str, Any] | Iterable[MCPServerConfig] | None, *,
                 log_dir: Path | None = None) -> None:
        if isinstance(servers, Mapping) or servers is None:
            configs = parse_servers(servers)
        else:
            configs = list(servers)
        self.connections: dict[str, MCPConnection] = {
            c.name: MCPConnection(c, log_dir=log_dir) for c in configs if c.enabled}
        self.errors: dict[str, str] = {}
        self._tools: dict[str, list[Tool]] = {}
        self._started = False
        self._lock: asyncio.Lock | None = None

    async def start(self, notify: StatusCallback | None = None) -> dict[str, str]:
        """Connect every server once (concurrently); returns {server: error} for the failures,
        which are also reported through `notify` as status events of kind `mcp`."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._started:
                return dict(self.errors)
            names = list(self.connections)
            outcomes = await asyncio.gather(
                *(self.connections[n].connect() for n in names), return_exceptions=True)
            for name, outcome in zip(names, outcomes, strict=True):
                if isinstance(outcome, asyncio.CancelledError):
                    raise outcome
                for note in self.connections[name].notes:
                    if notify is not None:
                        notify("mcp", note, {"server": name, "warning": note})
                if isinstance(outcome, BaseException):
                    self.errors[name] = str(outcome)
                    if notify is not None:
                        notify("mcp", f"MCP server {name!r} is unavailable: {outcome}",
                               {"server": name, "error": str(outcome)})
            self._started = True
        return dict(self.errors)

    def server_scripts(self, workdir: Path) -> list[str]:
        """The existing files the stdio servers' command lines name (`python3 tools/server.py`
        → that file), each read in its own `cwd` (else `workdir`). Reads the disk."""
        from loopwright.safety.plugin import script_paths

        found: list[str] = []
        for connection in self.connections.values():
            config = connection.config
            if config.command:
                line = shlex.join([config.command, *config.args])
                found += [path for path in script_paths([line], config.cwd or workdir)
                          if path not in found]
        return found

    def tools(self) -> list[Tool]:
        """The loopwright tools of every connected server (built once per server)."""
        out: list[Tool] = []
        for name, conn in self.connections.items():
            if name not in self._tools and conn.remote_tools:
                self._tools[name] = [self._make_tool(conn, t) for t in conn.remote_tools]
            out.extend(self._tools.get(name, []))
        return out

    async def register(self, registry: ToolRegistry,
                       notify: StatusCallback | None = None) -> None:
        """Connect (once) and add every server tool the registry does not have yet."""
        await self.start(notify)
        for item in self.tools():
            if item.name not in registry:
                registry.add(item)

    async def call(self, server: str, tool: str, arguments: dict[str, Any], *,
                   notify: StatusCallback | None = None) -> CallToolResult:
        """Call `tool` on `server` (connecting lazily)."""
        conn = self.connections.get(server)
        if conn is None:
            raise MCPServerError(f"no MCP server named {server!r} is configured")
        return await conn.call_tool(tool, arguments, notify=notify)

    async def aclose(self) -> None:
        """Close every connection; the next `start()` connects again."""
        await asyncio.gather(*(c.close() for c in self.connections.values()),
                             return_exceptions=True)
        self.errors.clear()
        self._started = False
        self._lock = None

    def _make_tool(self, conn: MCPConnection, remote: RemoteTool) -> Tool:
        server, remote_name = conn.name, remote.name

        async def call_remote(arguments: dict[str, Any], ctx: ToolContext) -> str:
            def notify(kind: StatusKind, message: str, data: dict[str, Any]) -> None:
                ctx.status(kind, message, **data)

            result = await self.call(server, remote_name, arguments, notify=notify)
            text = result_text(result)
            if result.is_error:
                raise ToolError(text or f"{remote_name!r} on MCP server {server!r} failed")
            return text or "(no output)"

        read_only, network = tool_guards(conn.config, remote)
        schema = clean_schema({k: v for k, v in (remote.input_schema or {}).items()
                               if k != "$schema"})
        return Tool(
            name=tool_name(server, remote_name),
            description=remote.description or remote.title or f"{remote_name} ({server} MCP)",
            parameters=schema,
            function=call_remote,
            raw_arguments=True,
            read_only=read_only,
            network=network,
            tags=frozenset({"mcp", f"mcp:{server}"}),
        )


class MCPToolsPlugin(LoopPlugin):
    """Connects an agent's MCP servers when a run starts and registers their tools."""

    def __init__(self, manager: MCPManager, registry: ToolRegistry) -> None:
        self.manager = manager
        self.registry = registry

    async def on_run_start(self, run: RunView) -> None:
        await self.manager.register(self.registry, run.status)
        # a script a stdio server runs from the workspace runs outside the sandbox at the next
        # start: the sandbox and the file tools hold it as they hold hook scripts
        scripts = await asyncio.to_thread(self.manager.server_scripts, run.settings.workdir)
        if scripts:
            run.tool_state[SERVER_SCRIPTS_STATE] = scripts


def tool_guards(config: MCPServerConfig, remote: RemoteTool) -> tuple[bool, bool]:
    """(read_only, network) of a server's tool. Its annotations are the server's own claims
    (MCP: untrusted unless the server is), and each would lower a guard: `readOnlyHint` lets a
    call run alongside others and skip the durable record made before a call that may change
    something; `openWorldHint: false` skips the egress check of the URLs in its arguments. So
    they count only for a server the user marked `trust_annotations`. (`destructiveHint` lowers
    nothing: every MCP call is treated as one that may change something.)"""
    hints = remote.annotations
    if not config.trust_annotations or hints is None:
        return False, True
    # MCP's default is an open world: only a tool that says otherwise is taken at its word
    return bool(hints.read_only_hint), hints.open_world_hint is not False


def describe_error(exc: BaseException) -> str:
    """The innermost useful message of an exception (task-group errors wrap the real one)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = cut(str(exc).strip())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def cut(text: str) -> str:
    """A server's error text, at most `_MAX_SERVER_TEXT` characters: it goes into status
    events, the session and the terminal, which a 5 MB message would fill."""
    if len(text) <= _MAX_SERVER_TEXT:
        return text
    more = len(text) - _MAX_SERVER_TEXT
    return f"{text[:_MAX_SERVER_TEXT]}… [{more:,} more characters not shown]"


def _is_transport_failure(exc: BaseException) -> bool:
    import anyio

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, OSError | EOFError | anyio.BrokenResourceError | anyio.ClosedResourceError
                  | anyio.EndOfStream):
        return True
    module = type(exc).__module__
    return module.startswith(("httpx2", "httpcore2", "httpx", "httpcore")) and \
        "Timeout" not in type(exc).__name__
