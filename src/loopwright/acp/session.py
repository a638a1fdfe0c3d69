"""One ACP session: a loopwright agent in the session's directory, its turns and their updates.

The session id is the loopwright session id, so the conversation is stored like any other
(`loopwright sessions show ID`, `run --resume ID`) and `session/load` finds it again. Events of a
turn are queued as they happen and sent in order by one task; a permission question first waits
for that queue, so the editor always knows the tool call it is asked about.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError, helpers
from acp.schema import AvailableCommand, AvailableCommandInput, PromptResponse, StopReason
from acp.schema import UnstructuredCommandInput as CommandHint

from loopwright.acp.inert import MarkdownGuard
from loopwright.acp.updates import (
    EDIT_TOOLS,
    FILE_CHARS,
    FileChange,
    ToolUpdate,
    call_finished,
    call_started,
    history_updates,
    plan_from_todos,
    proposed_change,
)
from loopwright.errors import LoopwrightError
from loopwright.events import (
    REPLY_ANEW,
    DoneEvent,
    Event,
    ReasoningDelta,
    StatusEvent,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
    TurnStart,
)

if TYPE_CHECKING:
    from acp.interfaces import Client

    from loopwright.agent import Agent, RunHandle

_STOPS: dict[str, StopReason] = {
    "completed": "end_turn", "max_turns": "max_turn_requests",
    "budget_exhausted": "max_turn_requests", "loop_detected": "end_turn",
    "refused": "refusal", "cancelled": "cancelled",
}
COMMANDS: dict[str, str] = {
    "tools": "List the tools this agent offers",
    "usage": "Tokens and cost of this session so far",
    "model": "The model this session talks to",
}
"""Slash commands answered by loopwright itself, without a model call."""


class EditorBuffers:
    """`EditorFiles` over the client's `fs/read_text_file` and `fs/write_text_file`."""

    def __init__(self, client: Client, session_id: str, *, read: bool, write: bool) -> None:
        self.client, self.session_id = client, session_id
        self.read, self.write = read, write

    async def read_text(self, path: Path) -> str | None:
        if not self.read:
            return None
        response = await self.client.read_text_file(session_id=self.session_id, path=str(path))
        return response.content

    async def write_text(self, path: Path, text: str) -> bool:
        if not self.write:
            return False
        await self.client.write_text_file(session_id=self.session_id, path=str(path),
                                          content=text)
        return True


class AcpSession:
    def __init__(self, session_id: str, workdir: Path, client: Client) -> None:
        self.id = session_id
        self.workdir = workdir
        self.client = client
        self.agent: Agent | None = None  # set by the host once built (off the event loop)
        self.buffers: EditorBuffers | None = None
        self.guard = MarkdownGuard()
        self._message = self.guard.stream()  # the reply and the reasoning being streamed
        self._thought = self.guard.stream()
        self._handle: RunHandle | None = None
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._announced: dict[str, ToolUpdate] = {}
        self._changes: dict[str, FileChange] = {}
        self._todos: dict[str, Any] = {}
        self._text_sent = False
        self._reply_open = False  # text of the model's reply being written was sent
        self._turn = False  # a prompt is being answered (set before its first await)
        self._provider_checked = False

    def show_images_from(self, allowed: Sequence[str]) -> None:
        """Images the editor may load: from the hosts of the run's egress allow-list."""
        self.guard = MarkdownGuard(tuple(allowed))
        self._message, self._thought = self.guard.stream(), self.guard.stream()

    # -- what the permission callback asks of the session --

    def announced(self, call_id: str) -> ToolUpdate | None:
        return self._announced.get(call_id)

    async def flush(self) -> None:
        await self._queue.join()

    # -- requests --

    async def prompt(self, text: str) -> PromptResponse:
        if self._turn:
            raise RequestError.invalid_request(
                {"session_id": self.id, "reason": "a turn is already running in this session; "
                 "send session/cancel first or wait for it to end"})
        self._turn = True
        try:
            return await self._answer(text)
        finally:
            self._turn = False

    async def _answer(self, text: str) -> PromptResponse:
        if text.startswith("/") and text[1:].split(" ", 1)[0] in COMMANDS:
            try:
                answer = await self._command(text[1:].split(" ", 1)[0])
            except LoopwrightError as exc:  # `/model` with no provider to name
                raise self._failed(str(exc)) from None
            await self._say(answer)
            return PromptResponse(stop_reason="end_turn")
        assert self.agent is not None
        if not self._provider_checked:  # checked again next time until it passes
            await self._check_provider(self.agent)
            self._provider_checked = True
        self._text_sent = False
        self._pump = self._pump or asyncio.create_task(self._send_updates())
        self._handle = await self.agent.start(text, extra_callback=self._queue.put_nowait,
                                              session_id=self.id)
        result = await self._handle.task
        await self.flush()
        for update in self._held():  # a turn that ended with no `done` event
            await self.client.session_update(session_id=self.id, update=update)
        if result.stop_reason == "error":
            raise self._failed(result.error or "the run failed")
        return PromptResponse(stop_reason=_STOPS.get(result.stop_reason, "end_turn"))

    async def _check_provider(self, agent: Agent) -> None:
        """What `loopwright run` checks before its first request (a key, a server that answers
        and accepts it, the model among those it serves): a run that could never work fails
        at once with the fix, not after its retries."""
        from loopwright.endpoints.probe import preflight

        try:
            await preflight((await agent.providers())[0])
        except LoopwrightError as exc:
            raise self._failed(str(exc)) from None

    def _failed(self, why: str) -> RequestError:
        # An editor shows the error's message, and maybe not its data: the reason goes there
        return RequestError(RequestError.internal_error().code, why, {"session_id": self.id})

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()

    async def replay(self) -> None:
        """Send the stored conversation as updates (`session/load`)."""
        assert self.agent is not None
        store = self.agent.state_services.store
        history = await store.load(self.id) if store is not None else []
        for update in history_updates(history, self.workdir):
            await self.client.session_update(session_id=self.id,
                                             update=self.guard.update(update))

    async def advertise_commands(self) -> None:
        commands = [AvailableCommand(name=name, description=text,
                                     input=AvailableCommandInput(root=CommandHint(hint="")))
                    for name, text in COMMANDS.items()]
        await self.client.session_update(session_id=self.id,
                                         update=helpers.update_available_commands(commands))

    async def aclose(self) -> None:
        self.cancel()
        if self._handle is not None:
            with contextlib.suppress(BaseException):
                await self._handle.task
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        if self.agent is not None:
            await self.agent.aclose()

    # -- the turn's updates --

    async def _send_updates(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                for update in await self._updates_for(event):
                    await self.client.session_update(session_id=self.id, update=update)
            except Exception:  # a client that stopped listening loses updates only
                pass
            finally:
                self._queue.task_done()

    async def _updates_for(self, event: Event) -> list[Any]:
        """What the editor is sent for `event`, with no remote image left in it."""
        if event.agent:  # a sub-agent's own events stay inside its `delegate` call
            return []
        if isinstance(event, TextDelta) and event.text:
            self._text_sent = self._reply_open = True
            return _chunks(thought=self._thought.end()) + _chunks(
                message=self._message.feed(event.text))
        if isinstance(event, ReasoningDelta) and event.text:
            return _chunks(message=self._message.end()) + _chunks(
                thought=self._thought.feed(event.text))
        # any other update ends the editor's current Markdown block: what it held is sent
        return self._held() + [self.guard.update(update)
                               for update in await self._event_updates(event)]

    def _held(self) -> list[Any]:
        """The end of the streamed text held back (an image or tag not yet complete)."""
        return _chunks(message=self._message.end()) + _chunks(thought=self._thought.end())

    async def _event_updates(self, event: Event) -> list[Any]:
        if isinstance(event, TurnStart | ToolCallEvent):
            self._reply_open = False
        if (isinstance(event, StatusEvent) and event.kind in REPLY_ANEW
                and self._reply_open):
            # a message cannot be taken back: the broken reply ends, one line says why, and the
            # one tried again starts a paragraph of its own instead of running on from it
            self._reply_open = False
            return [helpers.update_agent_message_text(f"\n\n↻ {event.message}\n\n")]
        if isinstance(event, ToolCallEvent):
            return [await self._call_started(event)]
        if isinstance(event, ToolResultEvent):
            return self._call_finished(event)
        if isinstance(event, DoneEvent) and not self._text_sent:
            output = event.result.output
            text = output if isinstance(output, str) else event.result.text
            return [helpers.update_agent_message_text(text)] if text else []
        return []

    async def _call_started(self, event: ToolCallEvent) -> ToolUpdate:
        change = None
        if event.name in EDIT_TOOLS:
            current = await self._current_text(event.arguments)
            change = proposed_change(self.workdir, event.name, event.arguments, current)
        if change is not None:
            self._changes[event.id] = change
        if event.name == "todo":
            self._todos[event.id] = event.arguments
        update = call_started(event.id, event.name, event.arguments, self.workdir, change)
        self._announced[event.id] = update
        return update

    def _call_finished(self, event: ToolResultEvent) -> list[Any]:
        self._announced.pop(event.id, None)
        out: list[Any] = [call_finished(event.id, event.content, is_error=event.is_error,
                                        change=self._changes.pop(event.id, None))]
        todos = self._todos.pop(event.id, None)
        plan = plan_from_todos(todos) if todos is not None and not event.is_error else None
        if plan is not None:
            out.append(plan)
        return out

    async def _current_text(self, arguments: Any) -> str | None:
        """The text of the file a call names, if it lies in the working directory: the editor's
        buffer when it lends them, else the disk (None: missing, too large or not text)."""
        path_argument = arguments.get("path") if isinstance(arguments, dict) else None
        if not isinstance(path_argument, str):
            return None
        path = (self.workdir / path_argument).resolve()
        if not path.is_relative_to(self.workdir):
            return None
        if self.buffers is not None and self.buffers.read:
            with contextlib.suppress(Exception):
                return await self.buffers.read_text(path)
        return await asyncio.to_thread(_read_small_text, path)

    # -- slash commands --

    async def _command(self, name: str) -> str:
        assert self.agent is not None
        if name == "tools":
            return "Tools: " + ", ".join(sorted(tool.name for tool in self.agent.registry))
        if name == "model":
            primary = (await self.agent.providers())[0]
            return f"{primary.model} at {primary.endpoint.shown_url} ({primary.mode})"
        store = self.agent.state_services.store
        info = await store.get(self.id) if store is not None else None
        if info is None:
            return "No usage yet in this session."
        cost = f", ${info.cost:.4f}" if info.cost is not None else ""
        return (f"{info.usage.input_tokens:,} tokens in, {info.usage.output_tokens:,} out, "
                f"{info.usage.requests} requests in {info.runs} runs{cost}")

    async def _say(self, text: str) -> None:
        update = helpers.update_agent_message_text(text)
        await self.client.session_update(session_id=self.id, update=self.guard.update(update))


def _chunks(*, message: str = "", thought: str = "") -> list[Any]:
    """Streamed text already made inert, in context: sent as it is, not guarded again."""
    if message:
        return [helpers.update_agent_message_text(message)]
    return [helpers.update_agent_thought_text(thought)] if thought else []


def _read_small_text(path: Path) -> str | None:
    try:
        if path.stat().st_size > FILE_CHARS:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
