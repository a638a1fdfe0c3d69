"""The scripted editor that drives `loopwright acp` in these tests: the official ACP SDK's client
side, with the agent as a subprocess."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from loopwright.testing import FakeModelServer, Reply
from shared_helpers import cli_env


class EditorClient:
    """A scripted editor: records every update, answers permission questions from a list, and
    (when it lends its buffers) serves and takes file text from memory."""

    def __init__(self, answers: list[str] | None = None,
                 buffers: dict[str, str] | None = None) -> None:
        self.updates: list[Any] = []
        self.questions: list[Any] = []
        self.answers = list(answers or [])
        self.buffers = buffers
        self.writes: list[tuple[str, str]] = []
        self.changed = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self.changed.set()

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.questions.append((tool_call, options))
        if not self.answers:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.answers.pop(0)))

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any
                             ) -> ReadTextFileResponse:
        assert self.buffers is not None
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any
                              ) -> WriteTextFileResponse:
        assert self.buffers is not None
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def of(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    async def wait_for(self, check: Any, what: str) -> None:
        async with asyncio.timeout(30):
            while not check():
                self.changed.clear()
                await self.changed.wait()


@asynccontextmanager
async def acp_agent(client: EditorClient, server: FakeModelServer | None, home: Path,
                    *, fs: bool = False, model: tuple[str, ...] = (),
                    **env: str) -> AsyncIterator[Any]:
    """`model`: the flags naming the model, else the fake model at `server`; `env`: settings."""
    log = (home / "acp-stderr.log").open("ab")
    if not model:
        assert server is not None
        model = ("--model", "fake-model", "--base-url", server.base_url)
    async with spawn_agent_process(
            client, sys.executable, "-m", "loopwright", "acp", *model, env=cli_env(home, **env),
            transport_kwargs={"stderr": log.fileno()}) as (conn, _process):
        capabilities = ClientCapabilities(fs=FileSystemCapabilities(
            read_text_file=fs, write_text_file=fs))
        reply = await conn.initialize(protocol_version=PROTOCOL_VERSION,
                                      client_capabilities=capabilities)
        assert reply.agent_capabilities.load_session is True
        yield conn
    log.close()


def text_of(client: EditorClient) -> str:
    return "".join(u.content.text for u in client.of("agent_message_chunk"))


async def shown_in_the_editor(tmp_path: Path, reply: str) -> str:
    """What the editor is sent when the model streams `reply` (3 characters a delta)."""
    client = EditorClient()
    with FakeModelServer([Reply(reply, chunk_size=3)]) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("show it")])
    return text_of(client)
