"""Trusted project config: a `loopwright.toml` inside a project cannot loosen safety until the
user trusts that directory (`loopwright trust`).

A project's file comes with the code, so whoever wrote the code (or a model that wrote the file
in an earlier run) wrote it too. Until the user trusts the directory, every setting that would
widen what runs is ignored, with one warning line naming the settings and the command to trust
them: approving everything, hooks, policy `allow` rules, the sandbox mode, network and binary,
environment pass-through, extra roots, MCP servers, private web addresses, another model server
(your API key would go there), and paths outside the project. Restrictions still apply: a
project's policy `deny` / `ask` rules are added to yours and its `hidden_tools` to your list.

Trust covers what the project puts in the prompt too: its instruction files (`AGENTS.md`,
`CLAUDE.md`, `.loopwright/instructions.md`) and its skills (`SKILL.md` in `.loopwright/skills/`,
`.claude/skills/`, `.agents/skills/`) are not loaded from an untrusted project, with one notice
line saying how to trust it.

Trust is recorded in the user's config directory (`trusted_projects.json`) as the directory and
one SHA-256 over all those files (`project_digest`; for a project whose only such file is
`loopwright.toml`, that file's own SHA-256, as before). Any of them that changes — a model that
writes `AGENTS.md` or a `SKILL.md` in one run — makes the project untrusted again, so what it
wrote is not read as instructions in a later run until the user trusts the project again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
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


class UntrustedContentWarning(UserWarning):
    """An untrusted project's instruction files or skills were not loaded."""


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
    """A limit set higher than the one in force, or lifted (`None`); a lower one is a
    restriction and applies (and a value that is no number is the settings' error to report)."""
    if value == base or base is None:  # no limit in force: any value is a limit
        return False
    if value is None:
        return True
    numeric = (int, float)
    if isinstance(value, bool) or not isinstance(value, numeric) or not isinstance(base, numeric):
        return False
    return value > base


def _switched_on(value: Any, base: Any, project: Path) -> bool:
    return bool(value) and not base


def _raised_usage(value: Any, base: Any, project: Path) -> bool:
    """`usage_limits`: loosening when any bound in force is raised or left out."""
    if not isinstance(value, Mapping):
        return value is not None or base is not None
    return any(_raised(value.get(key), bound, project) for key, bound in (base or {}).items())
def _lower_floor(value: Any, base: Any, project: Path) -> bool:
    return not isinstance(value, int) or value < base  # 0 (no floor) is the lowest


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
    "trust_project_files": _switched_on,  # a project may not vouch for its own files
    # the sandbox's limits (0 is none at all)
    **{name: _higher_limit for name in ("sandbox_max_processes", "sandbox_max_file_mb",
                                        "sandbox_max_memory_mb", "sandbox_tmp_mb")},
    "sandbox_min_free_mb": _lower_floor,
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
    sha = project_digest(project, config=data)
    if store.is_trusted(project, sha):
        return dict(table)
    kept, ignored = split_untrusted(table, base, project)
    if ignored and (str(path), sha) not in _warned:
        _warned.add((str(path), sha))
        why = ("has changed since you trusted it" if store.was_trusted(project)
               else "is not trusted")
        warnings.warn(printable(
            f"{path} {why}: ignoring {', '.join(sorted(set(ignored)))}; review the file, then "
            f"run `loopwright trust {project}` to apply them"),
            UntrustedConfigWarning, stacklevel=3)
    return kept


# --- what else the trust covers: instruction files and skills ----------------------------------

MAX_HASHED_BYTES = 8 * 1024 * 1024  # a bigger file is hashed as its first 8 MiB and its size


@dataclass(frozen=True, kw_only=True)
class ProjectContent:
    """The files of a project that its trust covers."""

    config: Path | None
    instructions: list[Path]
    skills: list[Path]

    @property
    def prompt_files(self) -> list[Path]:
        """The files that would reach the prompt (instructions and skills)."""
        return [*self.instructions, *self.skills]


def project_content(project: Path) -> ProjectContent:
    """The project's `loopwright.toml`, instruction files and skill files (blocking)."""
    return _content_of(project.resolve())


def _content_of(project: Path) -> ProjectContent:
    """`project_content` of a resolved path: every run asks, and resolving a path walks it."""
    from loopwright.context.prompt import project_files_below, repository_root
    from loopwright.skills.discovery import MAX_FOLDERS_PER_ROOT, SKILL_FILE, project_skill_roots

    repository = repository_root(project)
    config = project / PROJECT_FILE
    skills: list[Path] = []
    for root in project_skill_roots(project, repository):
        with contextlib.suppress(OSError):
            with os.scandir(root.path) as listing:
                folders = sorted(e.name for e in listing if not e.name.startswith("."))
            skills.extend(path for name in folders[:MAX_FOLDERS_PER_ROOT]
                          if (path := root.path / name / SKILL_FILE).is_file())
    return ProjectContent(config=config if config.is_file() else None,
                          instructions=project_files_below(repository, project), skills=skills)


def project_digest(project: Path, *, config: bytes | None = None,
                   content: ProjectContent | None = None) -> str:
    """The SHA-256 the trust of `project` is recorded with: over its `loopwright.toml`
    (`config`: its bytes, when the caller read them), instruction files and skills."""
    project = project.resolve()
    content = content or project_content(project)
    entries: list[str] = []
    if content.config is not None or config is not None:
        entries.append(f"{PROJECT_FILE}\t"
                       + (digest(config) if config is not None else _file_digest(content.config)))
    entries.extend(f"{os.path.relpath(path, project)}\t{_file_digest(path)}"
                   for path in content.prompt_files)
    if len(entries) == 1 and entries[0].startswith(PROJECT_FILE + "\t"):
        return entries[0].split("\t", 1)[1]  # the file alone: as trust has always recorded it
    return digest("\n".join(sorted(entries)).encode())


def _file_digest(path: Path | None) -> str:
    """The file's SHA-256, read without blocking on a FIFO and without following it into a
    device; a file that cannot be read is marked so (and so differs from any content)."""
    if path is None:
        return "absent"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        return f"unreadable:{exc.errno}"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not-a-file"
        hasher = hashlib.sha256()
        left = MAX_HASHED_BYTES
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            hasher.update(chunk)
            left -= len(chunk)
        return f"{hasher.hexdigest()}:{info.st_size}" if left <= 0 else hasher.hexdigest()
    finally:
        os.close(fd)


_content_noticed: set[tuple[str, str]] = set()


def prompt_content_trusted(project: Path, *, store: TrustStore | None = None) -> bool:
    """Whether the project's instruction files and skills may be loaded: yes when it has none,
    or when it is trusted with exactly this content. Otherwise one notice line (once per
    content) names what was left out and how to trust it."""
    project = project.resolve()
    content = _content_of(project)
    if not content.prompt_files:
        return True
    store = store or TrustStore()
    sha = project_digest(project, content=content)
    if store.is_trusted(project, sha):
        return True
    if (str(project), sha) not in _content_noticed:
        _content_noticed.add((str(project), sha))
        warnings.warn(_content_notice(project, content.prompt_files, store.was_trusted(project)),
                      UntrustedContentWarning, stacklevel=2)
    return False


def _content_notice(project: Path, files: Sequence[Path], changed: bool) -> str:
    names = ", ".join(os.path.relpath(path, project) for path in files[:4])
    more = f" and {len(files) - 4} more" if len(files) > 4 else ""
    why = "has changed since you trusted it" if changed else "is not trusted"
    return printable(f"{project} {why}: its instructions and skills were not loaded "
                     f"({names}{more}); review them, then run `loopwright trust {project}`")


def printable(text: str) -> str:
    """`text` with every control, format (bidi, zero-width) and separator character written as
    an escape: file names come from the project, and a notice must not repaint a terminal."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)
