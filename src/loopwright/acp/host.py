"""The ACP agent: what an editor (Zed, a JetBrains or Neovim plugin) talks to over stdio.

Each session gets a loopwright `Agent` built exactly as `loopwright run` builds one — settings from
the user's config and the session directory's `loopwright.toml` (subject to `loopwright trust`),
the same sandbox, policy and egress rules — with three differences: approvals go to the editor
(`session/request_permission`), file changes ask by default (with the diff), and, when the editor
lends its buffers, the file tools read and write through it.

Nothing the client sends loosens safety: its `mcpServers` are not started, the directory must be
an existing absolute path, and approvals fail closed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import typing
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    ClientCapabilities,
    EmbeddedResourceContentBlock,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from loopwright.acp.permissions import DEFAULT_PERMISSION_TIMEOUT, EditorPermissions
from loopwright.acp.session import AcpSession, EditorBuffers
from loopwright.acp.updates import EDIT_TOOLS

if TYPE_CHECKING:
    from acp.interfaces import Client

    from loopwright.agent import Agent

_AGENT_ONLY = frozenset({"tools", "approval", "clarify"})  # `Agent` keywords, not settings


class LoopwrightAcpAgent:
    """The ACP `Agent` side; `options` are the `Agent` keyword arguments of the CLI flags."""

    def __init__(self, options: dict[str, Any], *,
                 permission_timeout: float = DEFAULT_PERMISSION_TIMEOUT) -> None:
        self.options = {k: v for k, v in options.items() if k not in ("approval", "clarify")}
        self.permission_timeout = permission_timeout
        self.client: Client | None = None
        self.capabilities = ClientCapabilities()
        self.sessions: dict[str, AcpSession] = {}

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int,
                         client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None,
                         **kwargs: Any) -> InitializeResponse:
        from loopwright import __version__

        self.capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=False, audio=False,
                                                       embedded_context=True),
                mcp_capabilities=McpCapabilities(http=False, sse=False)),
            agent_info=Implementation(name="loopwright", title="loopwright", version=__version__),
            auth_methods=[])

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        return AuthenticateResponse()  # keys come from the user's environment and config

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None,
                          **kwargs: Any) -> NewSessionResponse:
        session = await self._open(uuid.uuid4().hex, _checked_dir(cwd))
        asyncio.get_running_loop().call_soon(_spawn, session.advertise_commands())
        return NewSessionResponse(session_id=session.id)

    async def load_session(self, cwd: str, session_id: str,
                           mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> LoadSessionResponse:
        workdir = _checked_dir(cwd)
        old = self.sessions.pop(session_id, None)
        if old is not None:
            await old.aclose()
        session = await self._open(session_id, workdir)
        store = session.agent.state_services.store if session.agent is not None else None
        if store is None or await store.get(session_id) is None:
            self.sessions.pop(session_id, None)
            await session.aclose()
            raise RequestError.invalid_params({"sessionId": session_id,
                                               "reason": "no stored session with this id"})
        await session.replay()
        await session.advertise_commands()
        return LoadSessionResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        return await self._session(session_id).prompt(prompt_text(prompt))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    async def aclose(self) -> None:
        for session in list(self.sessions.values()):
            await session.aclose()
        self.sessions.clear()

    # -- building blocks --

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id,
                                               "reason": "unknown session; create it with "
                                               "session/new or load it with session/load"})
        return session

    async def _open(self, session_id: str, workdir: Path) -> AcpSession:
        if self.client is None:
            raise RequestError.invalid_request({"reason": "initialize first"})
        session = AcpSession(session_id, workdir, self.client)
        fs = self.capabilities.fs
        if fs is not None and (fs.read_text_file or fs.write_text_file):
            session.buffers = EditorBuffers(self.client, session_id,
                                            read=bool(fs.read_text_file),
                                            write=bool(fs.write_text_file))
        permissions = EditorPermissions(self.client, session_id, announced=session.announced,
                                        flush=session.flush, timeout=self.permission_timeout,
                                        inert=lambda question: session.guard.update(question))
        # reads config files and probes paths: not on the event loop
        session.agent = await asyncio.to_thread(self._build_agent, workdir, session_id,
                                                permissions, session.buffers)
        session.show_images_from(session.agent.settings.egress_allow)
        self.sessions[session_id] = session
        return session

    def _build_agent(self, workdir: Path, session_id: str, permissions: EditorPermissions,
                     buffers: EditorBuffers | None) -> Agent:
        from loopwright.agent import Agent
        from loopwright.builtin.editor import EDITOR_FILES_SERVICE
        from loopwright.config import load_settings
        from loopwright.errors import ConfigError

        given = {k: v for k, v in self.options.items() if k not in _AGENT_ONLY}
        try:  # the session directory's loopwright.toml, not the one where the editor started us
            settings = load_settings({**given, "workdir": str(workdir)}, cwd=workdir,
                                     source="loopwright acp")
        except ConfigError as exc:
            raise RequestError.invalid_params({"cwd": str(workdir), "reason": str(exc)}) from None
        options = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)}
        options.update(session_id=session_id, policy=asking_file_changes(settings.policy),
                       store=True if settings.store is None else settings.store)
        agent = Agent(tools=self.options.get("tools", ()), approval=permissions, **options)
        if buffers is not None:
            agent.services[EDITOR_FILES_SERVICE] = buffers
        return agent


def asking_file_changes(policy: dict[str, Any]) -> dict[str, Any]:
    """`policy` with an `ask` rule on every file-changing tool: in an editor each change is
    shown with its diff and approved (once, or always for the session), as the user expects
    from Claude Code and Codex there. The user's own allow rules still apply first."""
    merged = dict(policy)
    for name in sorted(EDIT_TOOLS):
        table = dict(merged.get(name) or {})
        ask = table.get("ask") or []
        table["ask"] = [*([ask] if isinstance(ask, str) else ask), ".*"]
        merged[name] = table
    return merged


def prompt_text(blocks: list[Any]) -> str:
    """The prompt's content blocks as one text: text as is, a linked file as `@path`, an
    embedded file as a fenced block under its URI."""
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, ResourceContentBlock):
            parts.append(f"@{block.uri.removeprefix('file://')}")
        elif (isinstance(block, EmbeddedResourceContentBlock)
              and isinstance(block.resource, TextResourceContents)):
            uri = block.resource.uri.removeprefix("file://")
            parts.append(f"{uri}:\n```\n{block.resource.text}\n```")
        else:
            raise RequestError.invalid_params(
                {"reason": f"{getattr(block, 'type', type(block).__name__)} content is not "
                 "supported (see the agent's promptCapabilities)"})
    text = "\n".join(part for part in parts if part)
    if not text.strip():
        raise RequestError.invalid_params({"reason": "the prompt is empty"})
    return text


def _checked_dir(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute() or not path.is_dir():
        raise RequestError.invalid_params({"cwd": cwd,
                                           "reason": "must be an existing absolute directory"})
    return path.resolve()


_background: set[asyncio.Task[Any]] = set()


def _spawn(coro: Any) -> None:
    task = asyncio.ensure_future(coro)
    _background.add(task)
    task.add_done_callback(_background.discard)


async def serve_stdio(options: dict[str, Any]) -> None:
    """Speak ACP on this process's stdin and stdout until the client closes them."""
    from acp import run_agent
    from acp.interfaces import Agent as AcpAgent

    agent = LoopwrightAcpAgent(options)
    try:  # the methods it leaves out (modes, fork, list…) answer "method not found"
        await run_agent(typing.cast(AcpAgent, agent))
    finally:
        await agent.aclose()
