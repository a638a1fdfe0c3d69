"""Hooks: user code (Python callables or shell commands) around model calls, tool calls and events.

| hook           | gets                          | may                                             |
| -------------- | ----------------------------- | ----------------------------------------------- |
| `before_model` | the `ModelRequest`            | edit it in place                                |
| `after_model`  | the `ModelResponse`           | edit it in place                                |
| `before_tool`  | a `ToolHookCall`              | deny (with a reason) or rewrite the arguments   |
| `after_tool`   | a `ToolHookCall` with result  | replace the result text                         |
| `on_event`     | every `Event`                 | observe                                         |

Python hooks may be sync or async. A `before_tool` hook returns `None` (no objection), `False` or
`{"decision": "deny", "reason": "..."}` (deny), `{"arguments": {...}}` (rewrite) or a
`GateDecision`. An `after_tool` hook returns `None` or the replacement text.

Shell hooks come from config (`[hooks] before_tool = [{command = "...", tools = "bash|write_file",
timeout = 10}]`). They get the call as JSON on stdin and answer with JSON on stdout, using the same
shapes (`{"decision": "deny", "reason": "..."}`, `{"arguments": {...}}`, `{"result": "..."}`);
empty output means no objection. `before_tool` hooks fail closed: a hook that times out, exits
non-zero, prints unreadable output, answers a `decision` that is not a known allow word
(`allow`, `approve`, `continue`) or (in Python) raises denies the call, with the reason given to
the model. Every other hook fails open: its failure is reported as a `status` event of kind
`hook_error` (or logged, for `on_event`) and the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
import re
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loopwright.errors import ConfigError
from loopwright.events import Event, event_to_dict
from loopwright.messages import ModelRequest, ModelResponse
from loopwright.plugins import LoopPlugin
from loopwright.tools.base import ToolContext
from loopwright.tools.execute import GateDecision, PreparedCall, ToolOutcome

if TYPE_CHECKING:
    from loopwright.plugins import RunView

logger = logging.getLogger("loopwright.hooks")

ALLOW_DECISIONS = frozenset({"allow", "approve", "continue"})
DENY_DECISIONS = frozenset({"deny", "block", "refuse"})
HOOK_NAMES = ("before_model", "after_model", "before_tool", "after_tool", "on_event")
DEFAULT_COMMAND_TIMEOUT = 10.0
_NOISY_EVENTS = "text_delta|reasoning_delta"


@dataclass(kw_only=True)
class ToolHookCall:
    """What a tool hook sees. `result` and `is_error` are set for `after_tool` only."""

    tool: str
    arguments: dict[str, Any]
    call_id: str
    session_id: str | None
    workdir: str
    result: str | None = None
    is_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tool": self.tool, "arguments": self.arguments,
                                "call_id": self.call_id, "session_id": self.session_id,
                                "workdir": self.workdir}
        if self.result is not None:
            data.update(result=self.result, is_error=self.is_error)
        return data


@dataclass(kw_only=True)
class CommandHook:
    """A shell command run as a hook. `tools` (a regex, full match) limits tool hooks to some
    tools; `events` (a regex) limits `on_event` hooks, which skip text deltas by default."""

    command: str
    tools: str | None = None
    events: str | None = None
    timeout: float = DEFAULT_COMMAND_TIMEOUT

    def applies_to_tool(self, name: str) -> bool:
        return self.tools is None or re.fullmatch(self.tools, name) is not None

    def applies_to_event(self, event_type: str) -> bool:
        if self.events is None:
            return re.fullmatch(_NOISY_EVENTS, event_type) is None
        return re.fullmatch(self.events, event_type) is not None

    async def run(self, payload: dict[str, Any], cwd: str | None) -> dict[str, Any] | None:
        """Run with `payload` on stdin; the parsed JSON object it printed (None if nothing).

        Raises `HookFailure` on a timeout, a non-zero exit or output that is not a JSON object."""
        process = await asyncio.create_subprocess_shell(
            self.command, cwd=cwd or None, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True)
        data = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8")
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(data), self.timeout)
        except TimeoutError:
            _kill_group(process.pid)
            await process.wait()
            raise HookFailure(f"hook {self.command!r} timed out after {self.timeout:g}s") from None
        except BaseException:
            _kill_group(process.pid)
            raise
        if process.returncode != 0:
            detail = stderr.decode("utf-8", errors="replace").strip()[:500]
            raise HookFailure(f"hook {self.command!r} exited with code {process.returncode}"
                              + (f": {detail}" if detail else ""))
        text = stdout.decode("utf-8", errors="replace").strip()
        if not text:
            return None
        try:
            parsed = json.loads(text)
        except ValueError:
            raise HookFailure(f"hook {self.command!r} printed output that is not JSON: "
                              f"{text[:200]!r}") from None
        if not isinstance(parsed, dict):
            raise HookFailure(f"hook {self.command!r} printed JSON that is not an object")
        return parsed


class HookFailure(Exception):
    """A hook could not give an answer (timeout, crash, unreadable output)."""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


Hook = Callable[..., Any] | CommandHook


@dataclass(kw_only=True)
class Hooks:
    """Lists of hooks per point; build with keywords, `Hooks.from_config()` or a dict of lists."""

    before_model: list[Hook] = field(default_factory=list)
    after_model: list[Hook] = field(default_factory=list)
    before_tool: list[Hook] = field(default_factory=list)
    after_tool: list[Hook] = field(default_factory=list)
    on_event: list[Hook] = field(default_factory=list)

    @classmethod
    def from_config(cls, value: Hooks | Mapping[str, Any] | str | None) -> Hooks:
        """Hooks from a `Hooks`, a mapping of hook name → list of callables or command tables
        (the `hooks` setting), or nothing. Bad shapes raise `ConfigError`."""
        if isinstance(value, Hooks):
            return value
        if value is None:
            return cls()
        if isinstance(value, str):  # LOOPWRIGHT_HOOKS='{"before_tool": [...]}'
            try:
                value = json.loads(value)
            except ValueError as exc:
                raise ConfigError(f"hooks: not valid JSON: {exc}") from exc
        if not isinstance(value, Mapping):
            raise ConfigError(f"hooks must be a table of hook lists, got {type(value).__name__}")
        unknown = sorted(set(value) - set(HOOK_NAMES))
        if unknown:
            raise ConfigError(f"unknown hook(s) {', '.join(unknown)}; known hooks are "
                              f"{', '.join(HOOK_NAMES)}")
        built = cls()
        for name, items in value.items():
            entries = items if isinstance(items, list | tuple) else [items]
            getattr(built, name).extend(_as_hook(name, item) for item in entries)
        return built

    @property
    def empty(self) -> bool:
        return not any(getattr(self, name) for name in HOOK_NAMES)


def _as_hook(point: str, item: Any) -> Hook:
    if isinstance(item, CommandHook) or callable(item):
        return item  # type: ignore[no-any-return]
    if isinstance(item, str):
        return CommandHook(command=item)
    if isinstance(item, Mapping):
        unknown = sorted(set(item) - {"command", "tools", "events", "timeout"})
        if unknown or not isinstance(item.get("command"), str):
            raise ConfigError(f"hooks.{point}: each command hook needs `command` (a string) and "
                              "may have `tools`, `events` and `timeout`"
                              + (f"; unknown key(s) {', '.join(unknown)}" if unknown else ""))
        for key in ("tools", "events"):
            if item.get(key) is not None:
                try:
                    re.compile(str(item[key]))
                except re.error as exc:
                    raise ConfigError(f"hooks.{point}.{key}: bad regex {item[key]!r}: {exc}"
                                      ) from exc
        return CommandHook(command=item["command"], tools=item.get("tools"),
                           events=item.get("events"),
                           timeout=float(item.get("timeout", DEFAULT_COMMAND_TIMEOUT)))
    raise ConfigError(f"hooks.{point}: {item!r} is neither a callable nor a command table")


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    value = fn(*args)
    if inspect.isawaitable(value):
        value = await value
    return value


# --- model hooks ---------------------------------------------------------------------------------


class HookPlugin(LoopPlugin):
    """Runs `before_model` / `after_model` hooks (Python hooks edit the request/response)."""

    def __init__(self, hooks: Hooks) -> None:
        self.hooks = hooks

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        payload = {"hook": "before_model", "model": request.model, "turn": run.turn,
                   "session_id": run.session_id, "messages": len(request.messages),
                   "tools": [spec.name for spec in request.tools]}
        await self._run_all(run, self.hooks.before_model, request, payload)

    async def after_model(self, run: RunView, response: ModelResponse) -> None:
        message = response.message
        payload = {"hook": "after_model", "turn": run.turn, "session_id": run.session_id,
                   "text": message.content, "finish_reason": response.finish_reason,
                   "tool_calls": [{"name": c.name, "arguments": c.arguments}
                                  for c in message.tool_calls]}
        await self._run_all(run, self.hooks.after_model, response, payload)

    async def _run_all(self, run: RunView, hooks: list[Hook], subject: Any,
                       payload: dict[str, Any]) -> None:
        for hook in hooks:
            try:
                if isinstance(hook, CommandHook):
                    await hook.run(payload, str(run.settings.workdir or ""))
                else:
                    await _call(hook, subject)
            except Exception as exc:
                run.status("hook_error", f"{payload['hook']} hook failed: {exc}",
                           {"hook": payload["hook"], "error": str(exc)})


# --- tool hooks ----------------------------------------------------------------------------------


def _hook_call(prepared: PreparedCall | None, outcome: ToolOutcome | None,
               ctx: ToolContext) -> ToolHookCall:
    if prepared is not None:
        name, arguments, call_id = prepared.tool.name, dict(prepared.arguments), prepared.call.id
    else:
        assert outcome is not None
        name, arguments, call_id = outcome.call.name, {}, outcome.call.id
    return ToolHookCall(tool=name, arguments=arguments, call_id=call_id,
                        session_id=ctx.session_id, workdir=str(ctx.workdir),
                        result=outcome.content if outcome else None,
                        is_error=outcome.is_error if outcome else False)


@dataclass(kw_only=True)
class HookGate:
    """A `ToolGate` running `before_tool` hooks, failing closed."""

    hooks: Hooks

    async def __call__(self, prepared: PreparedCall, ctx: ToolContext) -> GateDecision | None:
        arguments: dict[str, Any] | None = None
        for hook in self.hooks.before_tool:
            if isinstance(hook, CommandHook) and not hook.applies_to_tool(prepared.tool.name):
                continue
            call = _hook_call(prepared, None, ctx)
            if arguments is not None:
                call.arguments = arguments
            try:
                if isinstance(hook, CommandHook):
                    answer = await hook.run({"hook": "before_tool", **call.to_dict()},
                                            str(ctx.workdir))
                else:
                    answer = await _call(hook, call)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                ctx.status("hook_error", f"before_tool hook failed; call denied: {exc}",
                           hook="before_tool", tool=prepared.tool.name, error=str(exc))
                return GateDecision(allow=False, reason=f"a safety hook failed ({exc})")
            decision = _as_decision(answer)
            if decision is None:
                continue
            if not decision.allow:
                return decision
            if decision.arguments is not None:
                arguments = decision.arguments
        return GateDecision(allow=True, arguments=arguments) if arguments is not None else None


def _as_decision(answer: Any) -> GateDecision | None:
    if answer is None or answer is True:
        return None
    if answer is False:
        return GateDecision(allow=False, reason="a before_tool hook denied it")
    if isinstance(answer, GateDecision):
        return answer
    if isinstance(answer, Mapping):
        if "decision" in answer:
            decision = answer["decision"]
            word = decision.strip().lower() if isinstance(decision, str) else None
            if word in DENY_DECISIONS:
                return GateDecision(allow=False, reason=str(answer.get("reason") or
                                                            "a before_tool hook denied it"))
            if word not in ALLOW_DECISIONS:
                return GateDecision(allow=False, reason=(
                    f"a before_tool hook answered the decision {decision!r:.60}, which is "
                    f"neither an allow ({', '.join(sorted(ALLOW_DECISIONS))}) nor a deny word; "
                    "treated as deny"))
        arguments = answer.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            return GateDecision(allow=False, reason="a before_tool hook returned arguments that "
                                                    "are not an object")
        return GateDecision(allow=True, arguments=arguments) if arguments is not None else None
    return GateDecision(allow=False, reason=f"a before_tool hook returned {answer!r}, which is "
                                            "not a decision")


@dataclass(kw_only=True)
class HookFilter:
    """A `ResultFilter` running `after_tool` hooks; each may replace the result text."""

    hooks: Hooks

    async def __call__(self, prepared: PreparedCall | None, outcome: ToolOutcome,
                       ctx: ToolContext) -> ToolOutcome:
        for hook in self.hooks.after_tool:
            if isinstance(hook, CommandHook) and not hook.applies_to_tool(outcome.call.name):
                continue
            call = _hook_call(prepared, outcome, ctx)
            try:
                if isinstance(hook, CommandHook):
                    answer = await hook.run({"hook": "after_tool", **call.to_dict()},
                                            str(ctx.workdir))
                    replacement = answer.get("result") if answer else None
                else:
                    replacement = await _call(hook, call)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                ctx.status("hook_error", f"after_tool hook failed: {exc}", hook="after_tool",
                           tool=outcome.call.name, error=str(exc))
                continue
            if isinstance(replacement, str):
                outcome.content = replacement
                outcome.data["hook_replaced"] = True
        return outcome


# --- events --------------------------------------------------------------------------------------


class EventHooks:
    """The `on_event` callback: Python hooks are called inline; command hooks run in the
    background (events must not wait on a subprocess)."""

    def __init__(self, hooks: Hooks, workdir: str | None = None) -> None:
        self.hooks = hooks
        self.workdir = workdir
        self._tasks: set[asyncio.Future[Any]] = set()

    def __call__(self, event: Event) -> None:
        for hook in self.hooks.on_event:
            if isinstance(hook, CommandHook):
                if hook.applies_to_event(event.type):
                    self._spawn(hook, event)
                continue
            try:
                value = hook(event)
                if inspect.isawaitable(value):
                    self._track(asyncio.ensure_future(value))
            except Exception:
                logger.exception("on_event hook %r failed", hook)

    def _spawn(self, hook: CommandHook, event: Event) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        payload = {"hook": "on_event", "event": event_to_dict(event)}
        self._track(asyncio.ensure_future(hook.run(payload, self.workdir)))

    def _track(self, task: asyncio.Future[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("on_event hook failed: %s", task.exception())

    async def drain(self) -> None:
        """Wait for background command hooks (tests and clean shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

