"""Policy and approvals: which tool calls run, which are refused, which need the user's yes.

Order of checks for one call (first verdict wins):

1. catastrophic shell commands (`rm -rf /` in any spelling, `cd / && rm -rf *`, `find / -delete`,
   `mkfs`/`mke2fs`, writes to block devices, fork bombs by shape) are refused, even with
   `approve_all` / `--yes`;
2. the policy's `deny` rules refuse when they match the raw call or any part of it; its `allow`
   rules run the call without asking only when every part is allowed;
3. its `ask` rules, dangerous shell commands (recursive deletes, `sudo`, force pushes, disk tools,
   writes into system directories, …) and shell text that cannot be checked (a computed command
   word, `eval` of run-time text, code piped into a shell) go to the approval callback.

Shell commands are parsed by `loopwright.safety.shell` into simple commands (chains, pipelines,
substitutions, `bash -c` payloads, wrappers such as `env`/`sudo`/`xargs`/`find -exec`), quotes
removed and paths normalised; each part is what rules are matched against. For file tools the
subject is the resolved path (relative to the working directory when inside it, and absolute),
so `./.github/…` and `a/../.github/…` are the same path. In `loopwright.toml`:

    [policy.bash]
    allow = ["^git (status|diff|log)\\b"]
    deny = ["\\bgit push\\b"]

Approval fails closed: with no callback and no `approve_all`, a call that needs approval is
denied, and the model is told why. A callback that raises, or answers anything but a known
"allow" answer, denies. "always" answers are cached per agent and session for a TTL.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from loopwright.errors import ConfigError
from loopwright.safety.sensitive import held_files
from loopwright.safety.shell import ShellVerdict, classify_command
from loopwright.settings import DEFAULTS
from loopwright.tools.base import ToolContext
from loopwright.tools.execute import GateDecision, PreparedCall

ApprovalAnswer = bool | Literal["always", "never", "yes", "no"]
ApprovalCallback = Callable[[str, str], Awaitable[ApprovalAnswer] | ApprovalAnswer]
"""`(action, detail) -> bool | "always" | "never"`; may be sync or async."""

RuleKind = Literal["allow", "deny", "ask"]
DEFAULT_APPROVAL_TTL = DEFAULTS.approval_ttl

# --- shell commands ----------------------------------------------------------------------------


def catastrophic_reason(command: str, cwd: str | None = None) -> str | None:
    """Why `command` must never run, even with `--yes`; None if it is not catastrophic."""
    return classify_command(command, cwd=cwd).catastrophic


def dangerous_reason(command: str, cwd: str | None = None) -> str | None:
    """The first reason `command` needs the user's approval, or None."""
    dangers = classify_command(command, cwd=cwd).dangers
    return dangers[0] if dangers else None


# --- policy rules --------------------------------------------------------------------------------


@dataclass(kw_only=True)
class ToolRules:
    """Compiled allow / deny / ask regexes for one tool name (or "*")."""

    allow: list[re.Pattern[str]] = field(default_factory=list)
    deny: list[re.Pattern[str]] = field(default_factory=list)
    ask: list[re.Pattern[str]] = field(default_factory=list)


class Policy:
    """Regex rules per tool: `Policy({"bash": {"allow": [...], "deny": [...], "ask": [...]}})`."""

    def __init__(self, rules: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.rules: dict[str, ToolRules] = {}
        for tool_name, table in (rules or {}).items():
            self.rules[str(tool_name)] = _compile_rules(str(tool_name), table)

    @classmethod
    def from_config(cls, value: Policy | Mapping[str, Any] | None) -> Policy:
        """A policy from an existing one, a mapping (the `policy` setting) or nothing."""
        if isinstance(value, Policy):
            return value
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise ConfigError(f"policy must be a table of tool names, got {type(value).__name__}")
        return cls(value)

    def covers(self, tool_name: str) -> bool:
        """Whether any rule applies to this tool."""
        return tool_name in self.rules or "*" in self.rules

    def match(self, tool_name: str, subject: str) -> tuple[RuleKind, str] | None:
        """The first verdict for one subject text (deny before allow before ask)."""
        return self.judge(tool_name, raw=[subject], parts=[subject])

    def judge(self, tool_name: str, *, raw: list[str], parts: list[str],
              allow_possible: bool = True) -> tuple[RuleKind, str] | None:
        """The verdict for a call: `deny` if a deny rule matches the raw subject or any part;
        `allow` only if every part matches an allow rule (and `allow_possible`); then `ask` if
        an ask rule matches anything. Returns the kind and the rule's text."""
        tables = [t for t in (self.rules.get(tool_name), self.rules.get("*")) if t is not None]
        if not tables:
            return None
        everything = [*raw, *parts]
        denied = _first_match([p for t in tables for p in t.deny], everything)
        if denied is not None:
            return "deny", denied
        allow_rules = [p for t in tables for p in t.allow]
        if allow_possible and parts and allow_rules:
            matched = [_first_match(allow_rules, [part]) for part in parts]
            if all(rule is not None for rule in matched):
                return "allow", str(matched[0])
        asked = _first_match([p for t in tables for p in t.ask], everything)
        return ("ask", asked) if asked is not None else None


def _first_match(patterns: list[re.Pattern[str]], subjects: list[str]) -> str | None:
    for pattern in patterns:
        if any(pattern.search(subject) for subject in subjects):
            return pattern.pattern
    return None


def _compile_rules(tool_name: str, table: Mapping[str, Any]) -> ToolRules:
    if not isinstance(table, Mapping):
        raise ConfigError(f"policy.{tool_name} must be a table with allow / deny / ask lists")
    unknown = sorted(set(table) - {"allow", "deny", "ask"})
    if unknown:
        raise ConfigError(f"policy.{tool_name}: unknown key(s) {', '.join(unknown)}; "
                          "use allow, deny and ask")
    compiled = ToolRules()
    for kind in ("allow", "deny", "ask"):
        patterns = table.get(kind) or []
        if isinstance(patterns, str):
            patterns = [patterns]
        for pattern in patterns:
            try:
                getattr(compiled, kind).append(re.compile(str(pattern)))
            except re.error as exc:
                raise ConfigError(f"policy.{tool_name}.{kind}: bad regular expression "
                                  f"{pattern!r}: {exc}") from exc
    return compiled


def call_subject(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """The raw text policy rules are matched against for a call."""
    for key in ("command", "path", "url", "patch"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


_PATCH_HEADER = re.compile(r"^(?:---|\+\+\+) (?:[ab]/)?([^\t\n]+)", re.MULTILINE)


def path_subjects(workdir: Path, arguments: Mapping[str, Any]) -> list[str]:
    """The paths a file tool call names, resolved (symlinks, `..`, `./`) and each given twice:
    relative to the working directory (when inside it) and absolute."""
    raw: list[str] = []
    for key in ("path", "cwd"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            raw.append(value.strip())
    patch = arguments.get("patch")
    if isinstance(patch, str):
        raw.extend(m.group(1).strip() for m in _PATCH_HEADER.finditer(patch[:1_000_000])
                   if m.group(1).strip() != "/dev/null")
    root = workdir.resolve()
    out: list[str] = []
    for value in raw:
        try:
            resolved = (root / os.path.expanduser(value)).resolve()
        except (OSError, RuntimeError, ValueError):
            continue
        if resolved.is_relative_to(root):
            out.append(resolved.relative_to(root).as_posix() or ".")
        out.append(resolved.as_posix())
    return out


# --- approvals -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ApprovalRequest:
    """The tool call an approval callback is being asked about, for callbacks that need more
    than `(action, detail)` — a server routes the question to the run and call it belongs to."""

    call_id: str
    tool: str
    context: ToolContext


_PENDING_APPROVAL: ContextVar[ApprovalRequest | None] = ContextVar("loopwright_pending_approval",
                                                                    default=None)


def current_approval() -> ApprovalRequest | None:
    """The call whose approval is being decided, while an approval callback runs (else None)."""
    return _PENDING_APPROVAL.get()


ALLOW_ANSWERS = frozenset({"yes", "y", "allow", "allowed", "approve", "approved", "always"})


class ApprovalCache:
    """Remembered "always" / "never" answers per (session, action), each valid for `ttl` seconds."""

    def __init__(self, ttl: float = DEFAULT_APPROVAL_TTL, max_entries: int = 4096) -> None:
        self.ttl = ttl
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], tuple[bool, float]] = OrderedDict()

    def get(self, session: str, action: str) -> bool | None:
        entry = self._entries.get((session, action))
        if entry is None:
            return None
        allowed, expires = entry
        if time.monotonic() >= expires:
            del self._entries[(session, action)]
            return None
        return allowed

    def put(self, session: str, action: str, allowed: bool) -> None:
        self._entries[(session, action)] = (allowed, time.monotonic() + self.ttl)
        self._entries.move_to_end((session, action))
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)


@dataclass(kw_only=True)
class Approver:
    """The approval gate of one run: `approve_all`, then cached answers, then the callback.

    Calling it (`await approver(action, detail)`) gives a bool, which is what
    `ToolContext.approve` expects; `decide()` also says why a request was denied. Only `True`
    and the words in `ALLOW_ANSWERS` allow; a callback that raises denies."""

    callback: ApprovalCallback | None = None
    approve_all: bool = False
    cache: ApprovalCache = field(default_factory=ApprovalCache)
    session_id: str = ""

    async def __call__(self, action: str, detail: str) -> bool:
        allowed, _ = await self.decide(action, detail)
        return allowed

    def will_ask(self, action: str) -> bool:
        """Whether `decide(action, …)` would ask the callback (not answered without it)."""
        return (not self.approve_all and self.callback is not None
                and self.cache.get(self.session_id, action) is None)

    async def ask_for_call(self, action: str, detail: str, ctx: ToolContext, *, tool: str,
                           why_asked: str, blanket: bool = True, remember: bool = False
                           ) -> tuple[bool, str]:
        """`decide()` for the call of `tool` that `ctx` belongs to: a callback can tell which
        call (and run) asks (`current_approval()`), and the answer is reported as an
        `approval` status naming `why_asked`."""
        pending = _PENDING_APPROVAL.set(ApprovalRequest(call_id=ctx.call_id, tool=tool,
                                                         context=ctx))
        try:
            allowed, why = await self.decide(action, detail, blanket=blanket, remember=remember)
        finally:
            _PENDING_APPROVAL.reset(pending)
        ctx.status("approval", f"{tool} ({why_asked}): {'allowed' if allowed else 'denied'}: "
                   f"{why}", tool=tool, allowed=allowed, reason=why, call_id=ctx.call_id)
        return allowed, why

    async def decide(self, action: str, detail: str, *, blanket: bool = True,
                     remember: bool = False) -> tuple[bool, str]:
        """(allowed, why). `blanket=False`: `approve_all` does not answer (only a person
        does); `remember=True`: a yes is kept for the session, not only "always" (a no is
        kept only as "never": a server's "no client is watching" must not outlive the
        moment)."""
        if self.approve_all and blanket:
            return True, "approved by approve_all"
        cached = self.cache.get(self.session_id, action)
        if cached is not None:
            return cached, "an earlier 'always' answer" if cached else "an earlier 'never' answer"
        if self.callback is None:
            return False, ("it needs the user's approval and no user is available to give it "
                           "(non-interactive run; the user can allow such actions with --yes or "
                           "approve_all=True)" if blanket else
                           "it needs the user's answer and no user is available to give it "
                           "(non-interactive run); --yes does not answer this question")
        try:
            answer: Any = self.callback(action, detail)
            if inspect.isawaitable(answer):
                answer = await answer
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return False, (f"the approval callback failed ({type(exc).__name__}: {exc}), so "
                           "the call was denied")
        word = answer.strip().lower() if isinstance(answer, str) else None
        allowed = answer is True or word in ALLOW_ANSWERS
        if word in ("always", "never") or (remember and allowed):
            self.cache.put(self.session_id, action, allowed)
        if allowed:
            return True, "approved by the user"
        if answer is False or word in ("no", "n", "never", "deny", "denied"):
            return False, "the user declined"
        return False, (f"the approval callback answered {answer!r:.60}, which is not an allow "
                       "answer, so the call was denied")


# --- the gate ------------------------------------------------------------------------------------

@dataclass(kw_only=True)
class PolicyGate:
    """A `ToolGate`: catastrophic commands, policy rules and approvals, in that order."""

    policy: Policy
    approver: Approver
    shell_tools: frozenset[str] = frozenset({"bash"})

    async def __call__(self, prepared: PreparedCall, ctx: ToolContext) -> GateDecision | None:
        name = prepared.tool.name
        arguments = prepared.arguments
        is_shell = name in self.shell_tools and isinstance(arguments.get("command"), str)
        if not is_shell and not self.policy.covers(name):
            return None  # the common case: nothing to check
        subject = call_subject(name, arguments)
        verdict: ShellVerdict | None = None
        if is_shell:
            verdict = await _classify(subject, ctx, arguments)
            if verdict.catastrophic is not None:
                fatal = verdict.catastrophic
                ctx.status("policy", f"refused {name}: {fatal}", tool=name, reason=fatal)
                return GateDecision(allow=False, reason=(
                    f"the command is catastrophic ({fatal}) and is never run, not even with the "
                    "user's blanket approval"))
            parts = list(verdict.parts)
            allow_possible = not verdict.opaque
        else:
            parts = path_subjects(Path(ctx.workdir), arguments) or [subject]
            allow_possible = True
        raw = [subject, *(verdict.aliases if verdict else ())]
        rule = self.policy.judge(name, raw=raw, parts=parts, allow_possible=allow_possible)
        if rule is not None and rule[0] == "deny":
            return GateDecision(allow=False, reason=f"it matches the deny rule {rule[1]!r} "
                                                    f"of the {name} policy")
        if rule is not None and rule[0] == "allow":
            return None
        danger = f"matches the ask rule {rule[1]!r}" if rule else None
        if danger is None and verdict is not None and verdict.dangers:
            danger = verdict.dangers[0]
        if danger is None:
            return None
        action = f"{name}: {danger}"
        detail = subject
        if prepared.tool.preview is not None and self.approver.will_ask(action):
            detail = await _with_preview(subject, prepared, ctx)
        allowed, why = await self.approver.ask_for_call(action, detail, ctx, tool=name,
                                                        why_asked=danger)
        if allowed:
            return None
        return GateDecision(allow=False, reason=f"the call is potentially dangerous ({danger}) "
                                                f"and {why}")


async def _with_preview(subject: str, prepared: PreparedCall, ctx: ToolContext) -> str:
    """`subject` and, below it, the diff the call would make (a file tool's `preview`)."""
    assert prepared.tool.preview is not None
    try:
        diff = await prepared.tool.preview(dict(prepared.arguments), ctx)
    except Exception:  # a preview is a courtesy: the question is asked without it
        diff = ""
    return f"{subject}\n{diff.rstrip()}" if diff.strip() else subject


async def _classify(command: str, ctx: ToolContext, arguments: Mapping[str, Any]
                    ) -> ShellVerdict:
    """The shell verdict, computed off the event loop."""
    workdir = Path(ctx.workdir).resolve()
    cwd_argument = arguments.get("cwd")
    cwd = os.path.normpath(workdir / cwd_argument) if isinstance(cwd_argument, str) else str(
        workdir)
    protected = held_files(ctx)
    # always a worker thread: parsing is CPU work and scripts the command runs are read
    return await asyncio.to_thread(classify_command, command, cwd=cwd,
                                   protected_paths=protected)
