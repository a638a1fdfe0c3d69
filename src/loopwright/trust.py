"""Trusted project config: a `loopwright.toml` inside a project cannot loosen safety until the
user trusts that directory (`loopwright trust`).

A project's file comes with the code, so whoever wrote the code (or a model that wrote the file
in an earlier run) wrote it too. Until the user trusts the directory, every setting that would
widen what runs is ignored, with one warning line naming the settings and the command to trust
them: approving everything, hooks, policy `allow` rules, the sandbox mode, network and binary,
environment pass-through, extra roots, MCP servers, private web addresses, another model server
(your API key would go there), and paths outside the project. Restrictions still apply: a
project's policy `deny` / `ask` rules are added to yours and its `hidden_tools` to your list.

Trust is recorded in the user's config directory (`trusted_projects.json`) as the directory and
the SHA-256 of its `loopwright.toml`; a file that changes is untrusted again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loopwright.errors import ConfigError

PROJECT_FILE = "loopwright.toml"
TRUST_FILE = "trusted_projects.json"
_SANDBOX_RANKS = {"read-only": 0, "workspace-write": 1, "full-access": 2}


class UntrustedConfigWarning(UserWarning):
    """A project's loopwright.toml tried to loosen safety and was partly ignored."""


# --- what loosens -------------------------------------------------------------------------------


def _set(value: Any, base: Any, project: Path) -> bool:
    return bool(value)


def _changed(value: Any, base: Any, project: Path) -> bool:
    return value is not None and value != base


def _always(value: Any, base: Any, project: Path) -> bool:
    return True


def _outside(value: Any, base: Any, project: Path) -> bool:
    """A path setting pointing outside the project (relative paths are inside it)."""
    if value is None or value == base:
        return False
    if not isinstance(value, str):
        return True
    target = Path(os.path.expanduser(value))
    resolved = (target if target.is_absolute() else project / target).resolve()
    return not (resolved == project or resolved.is_relative_to(project))


def _more_sandbox(value: Any, base: Any, project: Path) -> bool:
    rank = _SANDBOX_RANKS.get(str(value), len(_SANDBOX_RANKS))  # unknown: treat as loosest
    return rank > _SANDBOX_RANKS.get(str(base), 1)


def _more_names(value: Any, base: Any, project: Path) -> bool:
    if not isinstance(value, list):
        return bool(value)
    return bool(set(map(str, value)) - set(map(str, base or ())))


def _other_server(value: Any, base: Any, project: Path) -> bool:
    """Fallbacks naming their own server or key (a prefix like `openrouter:` is harmless)."""
    if not isinstance(value, list):
        return bool(value)
    return any(not isinstance(item, str) for item in value) and value != base


def _own_server(value: Any, base: Any, project: Path) -> bool:
    """A side model given as a table (its own server or key) rather than a model string."""
    return value is not None and not isinstance(value, str) and value != base


def _rule_with_server(value: Any, base: Any, project: Path) -> bool:
    """choose_model rules naming a model by table (its own server or key)."""
    rules = value if isinstance(value, list) else [value]
    return value != base and any(isinstance(r, dict) and not isinstance(r.get("model"), str)
                                 for r in rules)


def _store(value: Any, base: Any, project: Path) -> bool:
    if value is None or isinstance(value, bool) or value == base:
        return False
    return "://" in str(value) or _outside(value, base, project)


def _rubric_file(value: Any, base: Any, project: Path) -> bool:
    return isinstance(value, str) and value.startswith("@") and _outside(value[1:], None, project)


def _higher_limit(value: Any, base: Any, project: Path) -> bool:
    return not isinstance(value, int) or value <= 0 or value > base


def _raised(value: Any, base: Any, project: Path) -> bool:
    """A limit set higher than the one in force, or lifted (`None`), or not a number at all;
    a lower one is a restriction and applies."""
    if value == base:
        return False
    if base is None:  # no limit in force: any value is a limit
        return False
    numeric = (int, float)
    if isinstance(value, bool) or not isinstance(value, numeric) or not isinstance(base, numeric):
        return True
    return value > base


def _switched_on(value: Any, base: Any, project: Path) -> bool:
    return bool(value) and not base


def _raised_usage(value: Any, base: Any, project: Path) -> bool:
    """`usage_limits`: loosening when any bound in force is raised or left out."""
    if not isinstance(value, Mapping):
        return value is not None or base is not None
    return any(_raised(value.get(key), bound, project) for key, bound in (base or {}).items())


LOOSENING: dict[str, Callable[[Any, Any, Path], bool]] = {
    "approve_all": _set,
    "hooks": _always,  # runs your shell with the project's commands
    "allowed_roots": _set,
    "skill_paths": _set,  # the file tools may read there
    "sandbox_mode": _more_sandbox,
    "sandbox_network": _set,
    "sandbox_bwrap": _changed,  # another binary would run every command
    "env_passthrough": _more_names,
    "mcp_servers": _set,  # starts the project's commands
    "web_allow_private": _set,
    "egress_allow": _more_names,  # data may leave for these hosts unasked
    "base_url": _changed,  # your API key and conversation would go there
    "api_key": _changed,
    "fallbacks": _other_server,
    **{f"{task}_model": _own_server for task in ("summary", "grader", "memory", "router")},
    **{f"{task}_fallbacks": _other_server for task in ("summary", "grader", "memory", "router")},
    "workdir": _outside,
    "memory_dir": _outside,
    "data_dir": _outside,
    "cache_dir": _outside,
    "store": _store,
    "choose_model": _rule_with_server,
    "embeddings_url": _changed,  # past conversations would be sent there
    "embeddings_api_key": _changed,
    "rubric": _rubric_file,  # `@path` reads a file into the prompt
    "max_tool_calls_per_reply": _higher_limit,
    # raising any limit loosens: more turns, calls, money, time, remembered answers, or text
    # from past sessions and memory in the prompt
    **{name: _raised for name in (
        "max_turns", "iteration_budget", "max_auto_continues", "max_rubric_rounds",
        "output_retries", "doom_loop_threshold", "approval_ttl", "recall_limit", "memory_limit",
        "user_limit", "max_tokens", "tool_timeout", "request_timeout", "stream_idle_timeout",
        "retry_attempts", "retry_max_delay", "retry_max_pause")},
    "usage_limits": _raised_usage,
    "recall": _switched_on,  # past conversations (of any project) into the prompt
    "memory": _switched_on,
    "memory_learning": _switched_on,  # the model writes to memory that later runs read
    "system_prompt": _changed,  # the project would replace loopwright's own instructions
}
"""Settings an untrusted project may not set, each with the test of whether a value loosens
(compared with the value from the user's own config, or the default)."""


def split_untrusted(table: Mapping[str, Any], base: Mapping[str, Any], project: Path
                    ) -> tuple[dict[str, Any], list[str]]:
    """(the settings an untrusted project may apply, the names of those ignored). `base` holds
    the values in force without the project file (user config over defaults)."""
    kept: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in table.items():
        if key == "policy":
            kept[key], dropped = _restrictive_policy(value, base.get("policy"))
            ignored.extend(dropped)
        elif key == "hidden_tools" and isinstance(value, list):
            kept[key] = list(dict.fromkeys([*(base.get(key) or []), *value]))
        elif key in LOOSENING and LOOSENING[key](value, base.get(key), project):
            ignored.append(key)
        else:
            kept[key] = value
    return kept, ignored


def _restrictive_policy(value: Any, base: Any) -> tuple[Any, list[str]]:
    """The user's policy plus the project's `deny` and `ask` rules; its `allow` rules are
    dropped (an allow rule runs a call without asking)."""
    if not isinstance(value, Mapping):
        return value, []  # malformed: Policy.from_config reports it
    merged: dict[str, Any] = {name: dict(rules) if isinstance(rules, Mapping) else rules
                              for name, rules in (base or {}).items()}
    dropped: list[str] = []
    for tool_name, rules in value.items():
        if not isinstance(rules, Mapping):
            merged[tool_name] = rules
            continue
        if rules.get("allow"):
            dropped.append(f"policy.{tool_name}.allow")
        restricting = {kind: patterns for kind, patterns in rules.items() if kind != "allow"}
        target = merged.setdefault(tool_name, {}) if restricting else None
        if not isinstance(target, dict):
            continue
        for kind, patterns in restricting.items():
            extra = [patterns] if isinstance(patterns, str) else list(patterns or [])
            existing = target.get(kind) or []
            target[kind] = [*([existing] if isinstance(existing, str) else existing), *extra]
    return merged, dropped


# --- the trust store ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TrustEntry:
    directory: str
    sha256: str
    trusted_at: str


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class TrustStore:
    """The user's trusted project directories, in `<user config dir>/trusted_projects.json`."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from loopwright.config import user_config_dir

            path = user_config_dir() / TRUST_FILE
        self.path = path

    def entries(self) -> dict[str, TrustEntry]:
        """Every trusted directory; `ConfigError` if the file exists but cannot be read."""
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError(f"cannot read {self.path}: {exc.strerror}") from exc
        try:
            projects = json.loads(raw)["projects"]
            return {d: TrustEntry(directory=d, sha256=str(e["sha256"]),
                                  trusted_at=str(e.get("trusted_at", "")))
                    for d, e in projects.items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"{self.path} is not a valid trust file ({exc}); fix or delete it, "
                              "then trust your projects again") from exc

    def is_trusted(self, directory: Path, sha256: str) -> bool:
        """Fails closed: an unreadable trust file trusts nothing."""
        try:
            entry = self.entries().get(str(directory))
        except ConfigError:
            return False
        return entry is not None and entry.sha256 == sha256

    def was_trusted(self, directory: Path) -> bool:
        with contextlib.suppress(ConfigError):
            return str(directory) in self.entries()
        return False

    def trust(self, directory: Path, sha256: str) -> TrustEntry:
        entries = self.entries()
        entry = TrustEntry(directory=str(directory), sha256=sha256,
                           trusted_at=datetime.now(UTC).isoformat(timespec="seconds"))
        entries[entry.directory] = entry
        self._write(entries)
        return entry

    def revoke(self, directory: Path) -> bool:
        entries = self.entries()
        if entries.pop(str(directory), None) is None:
            return False
        self._write(entries)
        return True

    def _write(self, entries: Mapping[str, TrustEntry]) -> None:
        data = {"version": 1, "projects": {
            d: {"sha256": e.sha256, "trusted_at": e.trusted_at} for d, e in sorted(entries.items())
        }}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".trusted.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, indent=2)
                handle.write("\n")
            os.replace(temp, self.path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


# --- reading a project's file -------------------------------------------------------------------

_warned: set[tuple[str, str]] = set()


def apply_project_config(path: Path, data: bytes, table: Mapping[str, Any],
                         base: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a project's `loopwright.toml` (`table`, parsed from exactly `data`) that
    apply: all of them when the directory is trusted with this content, else only those that do
    not loosen safety, with one warning line for the rest."""
    project = path.parent.resolve()
    store = TrustStore()
    sha = digest(data)
    if store.is_trusted(project, sha):
        return dict(table)
    kept, ignored = split_untrusted(table, base, project)
    if ignored and (str(path), sha) not in _warned:
        _warned.add((str(path), sha))
        why = ("has changed since you trusted it" if store.was_trusted(project)
               else "is not trusted")
        warnings.warn(
            f"{path} {why}: ignoring {', '.join(sorted(set(ignored)))}; review the file, then "
            f"run `loopwright trust {project}` to apply them",
            UntrustedConfigWarning, stacklevel=3)
    return kept
