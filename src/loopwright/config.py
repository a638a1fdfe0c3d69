"""Settings: every knob is an `Agent` argument, a `loopwright.toml` key and a `LOOPWRIGHT_*`
variable.

Precedence, highest first: explicit argument → environment → `./loopwright.toml` →
the user's `~/.config/loopwright/loopwright.toml` → defaults. A project's `./loopwright.toml` may
not loosen safety unless the user trusted it (`loopwright.trust`, `loopwright trust`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopwright.errors import ConfigError

ENV_PREFIX = "LOOPWRIGHT_"


@dataclass(kw_only=True)
class Settings:
    """All configuration of an agent, after merging every source."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api_mode: str | None = None
    fallbacks: list[Any] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    system_prompt: str | None = None
    max_turns: int = 90
    stream: bool = True
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    context_window: int | None = None
    tool_call_format: str = "native"
    text_tool_calls: bool = True
    narration_nudge: bool = True
    allowed_tool_tags: list[str] | None = None
    hidden_tools: list[str] = field(default_factory=list)
    deferred_tools: Any = None  # None | "auto" | "all" | list of names
    strict_tools: bool = False  # OpenAI strict-mode tool schemas
    doom_loop_threshold: int = 3  # replies in a row making one identical call: warn, then stop
    max_tool_calls_per_reply: int = 64  # distinct calls run per reply; the rest: error (0: off)
    max_auto_continues: int = 2
    rubric: str | None = None
    max_rubric_rounds: int = 2
    iteration_budget: int | None = None
    session_id: str | None = None
    store: Any = None
    workdir: str | None = None
    approve_all: bool = False
    approval_ttl: float = 3600.0  # seconds an "always" / "never" approval answer is kept
    allowed_roots: list[str] = field(default_factory=list)  # extra roots for the file tools
    sandbox_mode: str = "workspace-write"  # read-only | workspace-write | full-access
    sandbox_network: bool = False  # commands may use the network
    env_passthrough: list[str] = field(default_factory=list)  # secret-looking vars to keep
    sandbox_bwrap: str = "bwrap"  # the bubblewrap binary (name on PATH or path)
    web_allow_private: bool = False  # web_fetch may reach loopback / private / link-local hosts
    policy: dict[str, Any] = field(default_factory=dict)
    hooks: Any = None
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    stream_idle_timeout: float = 120.0
    request_timeout: float = 600.0
    retry_attempts: int = 6
    retry_base_delay: float = 0.5
    retry_max_delay: float = 32.0
    retry_max_pause: float = 60.0
    tool_timeout: float | None = None
    reminders: bool = True
    compaction: bool = True
    summary_cooldown: float = 300.0  # seconds a failed summary model is not asked again
    memory: bool = False
    memory_dir: str | None = None  # default <data_dir>/memory; relative = inside the workdir
    memory_limit: int = 2200  # characters of MEMORY.md
    user_limit: int = 1375  # characters of USER.md
    recall: bool = False
    recall_limit: int = 3  # past sessions recalled into the first request
    cache_dir: str | None = None
    data_dir: str | None = None


FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(Settings))


def user_config_dir() -> Path:
    """The user's own config directory (`$XDG_CONFIG_HOME/loopwright`, `~/.config/loopwright`)."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "loopwright"


def config_paths(cwd: Path | None = None) -> list[Path]:
    """Config files in increasing precedence."""
    explicit = os.environ.get(ENV_PREFIX + "CONFIG")
    paths = [user_config_dir() / "loopwright.toml", project_config_path(cwd)]
    if explicit:
        paths.append(Path(explicit))
    return paths


def project_config_path(cwd: Path | None = None) -> Path:
    """The project's file, whose loosening settings need the user's trust."""
    return (cwd or Path.cwd()) / "loopwright.toml"


def load_settings(overrides: dict[str, Any] | None = None, *, cwd: Path | None = None,
                  environ: dict[str, str] | None = None) -> Settings:
    """Merge every source into one `Settings`; a bad key or value raises `ConfigError`."""
    merged: dict[str, Any] = {}
    project = project_config_path(cwd)
    for path in config_paths(cwd):
        if path.is_file():
            merged.update(_read_project(path, merged) if path == project else _read_toml(path))
    merged.update(_read_env(os.environ if environ is None else environ))
    for key, value in (overrides or {}).items():
        if value is not None:
            if key not in FIELD_NAMES:
                raise ConfigError(f"unknown setting {key!r}")
            merged[key] = value
    return Settings(**merged)


def _read_project(path: Path, below: dict[str, Any]) -> dict[str, Any]:
    """The project file's settings that apply (all, if trusted with exactly these bytes)."""
    from loopwright.trust import apply_project_config

    if path.resolve() == (user_config_dir() / "loopwright.toml").resolve():
        return {}  # the user's own file, already read
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from exc
    base = {**_defaults(), **below}
    return apply_project_config(path, data, _read_toml(path, data), base)


def _defaults() -> dict[str, Any]:
    return {f.name: getattr(Settings(), f.name) for f in dataclasses.fields(Settings)}


def _read_toml(path: Path, raw: bytes | None = None) -> dict[str, Any]:
    """The settings in one file (`raw`: its bytes, when the caller already read them)."""
    try:
        text = path.read_text(encoding="utf-8") if raw is None else raw.decode("utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from exc
    table = data.get("loopwright", data)
    unknown = sorted(set(table) - FIELD_NAMES)
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)}; "
                          f"known settings are the Agent keyword arguments")
    return dict(table)


def _read_env(environ: typing.Mapping[str, str]) -> dict[str, Any]:
    hints = typing.get_type_hints(Settings)
    out: dict[str, Any] = {}
    for name in FIELD_NAMES:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is None or raw == "":
            continue
        out[name] = _coerce(name, raw, hints[name])
    return out


def _coerce(name: str, raw: str, hint: Any) -> Any:
    kinds = _base_types(hint)
    try:
        if bool in kinds:
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if int in kinds:
            return int(raw)
        if float in kinds:
            return float(raw)
        if list in kinds or dict in kinds:
            if raw.lstrip().startswith(("[", "{")):
                return json.loads(raw)
            if list in kinds:
                return [part.strip() for part in raw.split(",") if part.strip()]
            raise ValueError(raw)
    except ValueError as exc:
        raise ConfigError(f"{ENV_PREFIX}{name.upper()}={raw!r} is not a valid value for "
                          f"{name} ({hint})") from exc
    return raw


def _base_types(hint: Any) -> set[Any]:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        kinds: set[Any] = set()
        for arg in typing.get_args(hint):
            kinds |= _base_types(arg)
        return kinds
    return {origin or hint}


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "loopwright"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "loopwright"
