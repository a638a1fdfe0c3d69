"""Policy and approvals: which tool calls run, which are refused, which need the user's yes.

Order of checks for one call (first verdict wins):

1. catastrophic shell commands (`rm -rf /`, `rm -rf ~`, `mkfs`, `dd` onto a block device, fork
   bombs) are refused, even with `approve_all` / `--yes`;
2. the policy's `deny` rules refuse; its `allow` rules run the call without asking;
3. its `ask` rules, and dangerous shell commands (recursive deletes, `sudo`, force pushes,
   `curl … | sh`, disk tools, writes into system directories, recursive `chmod` of system paths,
   …), go to the approval callback.

Policy rules are regular expressions per tool name (`"*"` = every tool), searched in the call's
subject: the command for `bash`, the path for file tools, the URL for `web_fetch`, else the
arguments as compact JSON. In `loopwright.toml`:

    [policy.bash]
    allow = ["^git (status|diff|log)\\b"]
    deny = ["\\bgit push\\b"]

Approval fails closed: with no callback and no `approve_all`, a call that needs approval is
denied, and the model is told why. "always" answers are cached per agent and session for a TTL.
"""

from __future__ import annotations

import inspect
import json
import re
import shlex
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from loopwright.errors import ConfigError
from loopwright.tools.base import ToolContext
from loopwright.tools.execute import GateDecision, PreparedCall

ApprovalAnswer = bool | Literal["always", "never", "yes", "no"]
ApprovalCallback = Callable[[str, str], Awaitable[ApprovalAnswer] | ApprovalAnswer]
"""`(action, detail) -> bool | "always" | "never"`; may be sync or async."""

RuleKind = Literal["allow", "deny", "ask"]
DEFAULT_APPROVAL_TTL = 3600.0

# --- dangerous and catastrophic shell commands ---------------------------------------------------

_SYSTEM_DIRS = r"(?:etc|usr|boot|bin|sbin|lib|lib32|lib64|opt|sys|proc|var/lib|root|srv)"
_BLOCK_DEVICE = r"/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/|loop)\w*"

DANGEROUS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern)) for name, pattern in (
        ("recursive delete", r"\brm\s+(?:[^;&|\n]*\s)?(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\b"),
        ("recursive delete", r"\bfind\b[^;&|\n]*\s-delete\b"),
        ("superuser command", r"(?:^|[\s;&|(`'\"])(?:sudo|doas|pkexec)\s"),
        ("superuser command", r"(?:^|[\s;&|(`'\"])su(?:\s+-\S*)*\s*(?:root\b|$|[;&|'\"])"),
        ("force push", r"\bgit\s+push\b[^;&|\n]*\s(?:--force\b|--force-with-lease\b|-f\b|\+\S)"),
        ("discard git work", r"\bgit\s+(?:reset\s+[^;&|\n]*--hard|clean\s+[^;&|\n]*-\w*f)\b"),
        ("pipe download to a shell",
         r"\b(?:curl|wget|fetch)\b[^;&\n]*\|\s*(?:sudo\s+)?(?:\S*/)?(?:ba|z|da|k|fi)?sh\b"),
        ("pipe download to a shell",
         r"\b(?:ba|z|da|k)?sh\b[^;&|\n]*(?:<\(|\$\()\s*(?:curl|wget)\b"),
        ("pipe download to an interpreter",
         r"\b(?:curl|wget)\b[^;&\n]*\|\s*(?:sudo\s+)?(?:python\d?(?:\.\d+)?|perl|ruby|node)\b"),
        ("disk tool", r"\b(?:fdisk|sfdisk|gdisk|parted|wipefs|mkswap|shred|cryptsetup)\b"),
        ("disk tool", r"\bdd\b[^;&|\n]*\bof="),
        ("write to a system directory", rf">\s*/{_SYSTEM_DIRS}(?:/|\s|$)"),
        ("write to a system directory", rf"\btee\s+(?:-\w+\s+)*/{_SYSTEM_DIRS}/"),
        ("write to a system directory",
         rf"\b(?:cp|mv|install|ln|rsync)\b[^;&|\n]*\s/{_SYSTEM_DIRS}(?:/\S*)?\s*(?:$|[;&|])"),
        ("recursive permission change on a system path",
         rf"\b(?:chmod|chown|chgrp)\s+(?:-\S+\s+)*-\w*R\w*\s+(?:\S+\s+)?/(?:{_SYSTEM_DIRS}|home)?"
         r"(?:\s|/|$)"),
        ("world-writable permissions", r"\bchmod\s+(?:-\S+\s+)*(?:0?777|a\+rwx)\s+/"),
        ("system power command", r"(?:^|[\s;&|'\"])(?:shutdown|reboot|halt|poweroff)\b"),
        ("kill every process", r"\bkill\s+-(?:9|KILL)\s+-1\b"),
        ("kill every process", r"\bkillall\s+-?\w*\s*(?:-u\s+\S+\s*)?$"),
    )
)

_FORK_BOMB = re.compile(r"(\w+|:)\s*\(\)\s*\{[^}]*\1\s*\|\s*\1\s*&[^}]*\}")
_MKFS = re.compile(r"(?:^|[\s;&|(`/])mkfs(?:\.\w+)?\b")
_DD_TO_DEVICE = re.compile(rf"\bdd\b[^;&|\n]*\bof={_BLOCK_DEVICE}")
_REDIRECT_TO_DEVICE = re.compile(rf">\s*{_BLOCK_DEVICE}\b")
_CATASTROPHIC_TARGETS = frozenset({
    "/", "~", "$HOME", "${HOME}", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64",
    "/opt", "/proc", "/root", "/sbin", "/sys", "/usr", "/var",
})


def catastrophic_reason(command: str, _depth: int = 0) -> str | None:
    """Why `command` must never run, even with `--yes`; None if it is not catastrophic.

    Quoted words that look like commands (`bash -c '…'`, `eval "…"`) are checked too."""
    if _FORK_BOMB.search(command):
        return "a fork bomb"
    if _MKFS.search(command):
        return "formatting a file system (mkfs)"
    if _DD_TO_DEVICE.search(command) or _REDIRECT_TO_DEVICE.search(command):
        return "writing directly to a block device"
    for words in _simple_commands(command):
        target = _recursive_rm_target(words)
        if target is not None:
            return f"recursively deleting {target}"
        for word in words:
            nested = None if _depth > 3 or " " not in word else catastrophic_reason(word,
                                                                                     _depth + 1)
            if nested is not None:
                return nested
    return None


def dangerous_reason(command: str) -> str | None:
    """The kind of danger in `command` that needs the user's approval, or None."""
    for name, pattern in DANGEROUS:
        if pattern.search(command):
            return name
    return None


def _simple_commands(command: str) -> list[list[str]]:
    """Each simple command's words (quoted strings stay one word)."""
    out: list[list[str]] = []
    for segment in re.split(r"[;&|\n()`]+|\$\(", command):
        try:
            words = shlex.split(segment, comments=True)
        except ValueError:
            words = segment.split()
        if words:
            out.append(words)
    return out


def _recursive_rm_target(words: list[str]) -> str | None:
    """The catastrophic target of an `rm -r` in these words (wrappers like `sudo -u x` before it
    are skipped by looking for the `rm` word itself), or None."""
    starts = [i for i, word in enumerate(words) if word.rsplit("/", 1)[-1] == "rm"]
    if not starts:
        return None
    flags: list[str] = []
    targets: list[str] = []
    after_dashes = False
    for word in words[starts[0] + 1:]:
        if word == "--" and not after_dashes:
            after_dashes = True
        elif word.startswith("-") and not after_dashes:
            flags.append(word)
        else:
            targets.append(word)
    recursive = any(f == "--recursive" or (not f.startswith("--") and ("r" in f or "R" in f))
                    for f in flags)
    if not recursive:
        return None
    for target in targets:
        if _normalise_target(target) in _CATASTROPHIC_TARGETS:
            return target
    return None


def _normalise_target(target: str) -> str:
    while target.endswith(("/*", "/.")) and len(target) > 2:
        target = target[:-2]
    if target in ("/*", "/."):
        return "/"
    stripped = target.rstrip("/")
    return stripped or "/"


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
        """The first verdict for this call (deny before allow before ask) and the rule's text."""
        tables = [t for t in (self.rules.get(tool_name), self.rules.get("*")) if t is not None]
        kinds: tuple[RuleKind, ...] = ("deny", "allow", "ask")
        for kind in kinds:
            for table in tables:
                for pattern in getattr(table, kind):
                    if pattern.search(subject):
                        return kind, pattern.pattern
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
    """The text policy rules are matched against for a call."""
    for key in ("command", "path", "url", "patch"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)


# --- approvals -----------------------------------------------------------------------------------


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
    `ToolContext.approve` expects; `decide()` also says why a request was denied."""

    callback: ApprovalCallback | None = None
    approve_all: bool = False
    cache: ApprovalCache = field(default_factory=ApprovalCache)
    session_id: str = ""

    async def __call__(self, action: str, detail: str) -> bool:
        allowed, _ = await self.decide(action, detail)
        return allowed

    async def decide(self, action: str, detail: str) -> tuple[bool, str]:
        if self.approve_all:
            return True, "approved by approve_all"
        cached = self.cache.get(self.session_id, action)
        if cached is not None:
            return cached, "an earlier 'always' answer" if cached else "an earlier 'never' answer"
        if self.callback is None:
            return False, ("it needs the user's approval and no user is available to give it "
                           "(non-interactive run; the user can allow such actions with --yes or "
                           "approve_all=True)")
        answer = self.callback(action, detail)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer in ("always", "never"):
            self.cache.put(self.session_id, action, answer == "always")
        allowed = answer is True or answer in ("always", "yes")
        return allowed, "approved by the user" if allowed else "the user declined"


# --- the gate ------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class PolicyGate:
    """A `ToolGate`: catastrophic commands, policy rules and approvals, in that order."""

    policy: Policy
    approver: Approver
    shell_tools: frozenset[str] = frozenset({"bash"})

    async def __call__(self, prepared: PreparedCall, ctx: ToolContext) -> GateDecision | None:
        name = prepared.tool.name
        is_shell = name in self.shell_tools and isinstance(prepared.arguments.get("command"), str)
        if not is_shell and not self.policy.covers(name):
            return None  # the common case: nothing to check
        subject = call_subject(name, prepared.arguments)
        if is_shell:
            fatal = catastrophic_reason(subject)
            if fatal is not None:
                ctx.status("policy", f"refused {name}: {fatal}", tool=name, reason=fatal)
                return GateDecision(allow=False, reason=(
                    f"the command is catastrophic ({fatal}) and is never run, not even with the "
                    "user's blanket approval"))
        verdict = self.policy.match(name, subject)
        if verdict is not None and verdict[0] == "deny":
            return GateDecision(allow=False, reason=f"it matches the deny rule {verdict[1]!r} "
                                                    f"of the {name} policy")
        if verdict is not None and verdict[0] == "allow":
            return None
        danger = f"matches the ask rule {verdict[1]!r}" if verdict else None
        if danger is None and is_shell:
            danger = dangerous_reason(subject)
        if danger is None:
            return None
        allowed, why = await self.approver.decide(f"{name}: {danger}", subject)
        ctx.status("approval", f"{name} ({danger}): {'allowed' if allowed else 'denied'}: {why}",
                   tool=name, allowed=allowed, reason=why)
        if allowed:
            return None
        return GateDecision(allow=False, reason=f"the call is potentially dangerous ({danger}) "
                                                f"and {why}")
