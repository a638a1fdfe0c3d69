"""Settings: every knob is an `Agent` argument, a `loopwright.toml` key and a `LOOPWRIGHT_*`
variable.

Precedence, highest first: explicit argument → environment → `./loopwright.toml` →
the user's `~/.config/loopwright/loopwright.toml` → defaults. A project's `./loopwright.toml` may
not loosen safety unless the user trusted it (`loopwright.trust`, `loopwright trust`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from typing_extensions import TypedDict

from loopwright.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError

ENV_PREFIX = "LOOPWRIGHT_"


def _as_text(value: Any) -> Any:
    """Paths may be given as `Path` objects; settings keep them as text."""
    return os.fspath(value) if isinstance(value, os.PathLike) else value


@dataclasses.dataclass(frozen=True)
class _AtLeast:
    """A lower bound on a number setting, turned into pydantic's `ge` when a value is first
    validated (pydantic is not imported before then)."""

    ge: int


@dataclasses.dataclass(frozen=True)
class _Text:
    """A setting given as text or a path (`os.PathLike`), kept as text."""


PathText = Annotated[str, _Text()]
Positive = Annotated[int, _AtLeast(1)]
Count = Annotated[int, _AtLeast(0)]
Seconds = Annotated[float, _AtLeast(0)]
ApiMode = Literal["chat_completions", "responses", "anthropic_messages"]
ToolCallFormat = Literal["native", "prompt"]


SIDE_TASKS = ("summary", "grader", "memory", "router")
"""The side tasks that may have a model of their own: `<task>_model`, `<task>_fallbacks`."""


class UsageLimits(TypedDict, total=False):
    """`usage_limits`: bounds for one run (sub-agents have their own); leave out what is not
    limited. `cost` is USD from the price table (a model without a price cannot be held to it)."""

    requests: int
    input_tokens: int
    output_tokens: int
    total_tokens: int
    cost: float


# The one definition of every setting: its type and its default. Adding a setting is one line
# here, the same name in `AgentOptions` below (tests/test_settings.py checks), and a row in
# docs/settings.md (tests/test_docs.py checks).
#
# A plain dataclass, so that importing this module builds no validator: `load_settings` checks
# the merged values with a pydantic validator built on first use (`_validator`).
@dataclasses.dataclass(kw_only=True)
class Settings:
    """All configuration of an agent, after merging every source (validated by pydantic)."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api_mode: ApiMode | None = None
    fallbacks: list[Any] = dataclasses.field(default_factory=list)
    aliases: dict[str, str] = dataclasses.field(default_factory=dict)
    system_prompt: str | None = None
    max_turns: Positive = 90
    stream: bool = True
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: Positive | None = None
    context_window: Positive | None = None
    tool_call_format: ToolCallFormat = "native"
    text_tool_calls: bool = True
    review: Literal["auto", "all", "off"] | list[str] = "auto"  # which review checks run
    review_off: list[str] = dataclasses.field(default_factory=list)  # checks turned off by name
    review_budget: Count = 2  # extra model calls the review stage may cause in one run
    review_checks: list[Any] = dataclasses.field(default_factory=list)  # user `review.Check`s
    allowed_tool_tags: list[str] | None = None
    hidden_tools: list[str] = dataclasses.field(default_factory=list)
    deferred_tools: Literal["auto", "all"] | list[str] | None = None
    strict_tools: bool = False  # OpenAI strict-mode tool schemas
    doom_loop_threshold: Positive = 3  # replies in a row making one identical call: warn, stop
    max_tool_calls_per_reply: Count = 64  # distinct calls run per reply; the rest: error (0: off)
    max_auto_continues: Count = 2
    summary_model: str | dict[str, Any] | None = None  # side models (routing/side.py)
    summary_fallbacks: list[Any] = dataclasses.field(default_factory=list)
    grader_model: str | dict[str, Any] | None = None
    grader_fallbacks: list[Any] = dataclasses.field(default_factory=list)
    memory_model: str | dict[str, Any] | None = None
    memory_fallbacks: list[Any] = dataclasses.field(default_factory=list)
    router_model: str | dict[str, Any] | None = None
    router_fallbacks: list[Any] = dataclasses.field(default_factory=list)
    choose_model: Any = None  # per-call routing: a function or a list of rules
    router: bool = False  # the intent router: trivial prompts without tools
    rubric: str | None = None
    max_rubric_rounds: Count = 2
    output_retries: Count = 2  # invalid structured output sent back this often, then a stop
    output_mode: Literal["auto", "tool", "native"] = "auto"  # how output_type is asked for
    raise_on_error: bool = True  # run() raises the error of a failed run; False returns it
    usage_limits: UsageLimits | None = None  # tokens / requests / cost bounds of one run
    otel: bool = False  # OpenTelemetry spans (GenAI conventions); needs loopwright[otel]
    iteration_budget: Positive = 90  # model calls shared by a run and all its sub-agents
    session_id: str | None = None
    store: Any = None
    workdir: PathText | None = None
    approve_all: bool = False
    approval_ttl: Seconds = 3600.0  # seconds an "always" / "never" approval answer is kept
    allowed_roots: list[PathText] = dataclasses.field(default_factory=list)  # file-tool roots
    sandbox_mode: str = "workspace-write"  # read-only | workspace-write | full-access
    sandbox_network: bool = False  # commands may use the network
    env_passthrough: list[str] = dataclasses.field(default_factory=list)  # secret vars to keep
    sandbox_bwrap: str = "bwrap"  # the bubblewrap binary (name on PATH or path)
    sandbox_max_processes: Count = 1024  # processes and threads of one command; 0 = no limit
    sandbox_max_file_mb: Count = 4096  # size of any one file a command writes; 0 = no limit
    sandbox_max_memory_mb: Count = 16384  # address space of each process; 0 = no limit
    sandbox_tmp_mb: Count = 1024  # size of the private /tmp; 0 = the kernel's (half the RAM)
    sandbox_min_free_mb: Count = 1024  # free disk a command must leave on writable roots; 0 = any
    web_allow_private: bool | list[str] = False  # web_fetch may reach private hosts
    egress_allow: list[str] = dataclasses.field(default_factory=list)  # hosts reached unasked
    policy: dict[str, Any] = dataclasses.field(default_factory=dict)
    hooks: Any = None
    mcp_servers: dict[str, Any] = dataclasses.field(default_factory=dict)
    stream_idle_timeout: Seconds = 120.0
    request_timeout: Seconds = 600.0
    retry_attempts: Positive = 6
    retry_base_delay: Seconds = 0.5
    retry_max_delay: Seconds = 32.0
    retry_max_pause: Seconds = 60.0
    tool_timeout: Seconds | None = None
    reminders: bool = True
    compaction: bool = True
    summary_cooldown: Seconds = 300.0  # seconds a failed summary model is not asked again
    memory: bool = False
    memory_dir: PathText | None = None  # default: per project under <data_dir>/memory/projects
    memory_limit: Positive = 2200  # characters of MEMORY.md
    user_limit: Positive = 1375  # characters of USER.md
    memory_learning: bool = False  # at run end a side call saves durable facts
    recall: bool = False
    recall_limit: Count = 3  # past sessions recalled into the first request
    embeddings_url: str | None = None  # OpenAI-compatible /v1/embeddings, recall
    embeddings_model: str | None = None
    embeddings_api_key: str | None = None
    skills: bool = True  # SKILL.md folders: listed in the prompt, loaded by `skill`
    trust_project_files: bool = False  # the workdir's AGENTS.md & skills without `trust`
    skill_paths: list[PathText] = dataclasses.field(default_factory=list)  # more dirs
    cache_dir: PathText | None = None
    data_dir: PathText | None = None


class AgentOptions(TypedDict, total=False):
    """The settings as `Agent(...)` keyword arguments (typed for IDEs and mypy); the same names
    as `Settings`, whose defaults apply to what is left out."""

    model: str | None
    base_url: str | None
    api_key: str | None
    api_mode: ApiMode | None
    fallbacks: list[Any]
    aliases: dict[str, str]
    system_prompt: str | None
    max_turns: int
    stream: bool
    reasoning_effort: str | None
    temperature: float | None
    max_tokens: int | None
    context_window: int | None
    tool_call_format: ToolCallFormat
    text_tool_calls: bool
    review: Literal["auto", "all", "off"] | list[str]
    review_off: list[str]
    review_budget: int
    review_checks: list[Any]
    allowed_tool_tags: list[str] | None
    hidden_tools: list[str]
    deferred_tools: Literal["auto", "all"] | list[str] | None
    strict_tools: bool
    doom_loop_threshold: int
    max_tool_calls_per_reply: int
    max_auto_continues: int
    summary_model: str | dict[str, Any] | None
    summary_fallbacks: list[Any]
    grader_model: str | dict[str, Any] | None
    grader_fallbacks: list[Any]
    memory_model: str | dict[str, Any] | None
    memory_fallbacks: list[Any]
    router_model: str | dict[str, Any] | None
    router_fallbacks: list[Any]
    choose_model: Any
    router: bool
    rubric: str | None
    max_rubric_rounds: int
    output_retries: int
    output_mode: Literal["auto", "tool", "native"]
    raise_on_error: bool
    usage_limits: UsageLimits | None
    otel: bool
    iteration_budget: int
    session_id: str | None
    store: Any
    workdir: str | os.PathLike[str] | None
    approve_all: bool
    approval_ttl: float
    allowed_roots: list[str | os.PathLike[str]]
    sandbox_mode: str
    sandbox_network: bool
    env_passthrough: list[str]
    sandbox_bwrap: str
    sandbox_max_processes: int
    sandbox_max_file_mb: int
    sandbox_max_memory_mb: int
    sandbox_tmp_mb: int
    sandbox_min_free_mb: int
    web_allow_private: bool | list[str]
    egress_allow: list[str]
    policy: dict[str, Any]
    hooks: Any
    mcp_servers: dict[str, Any]
    stream_idle_timeout: float
    request_timeout: float
    retry_attempts: int
    retry_base_delay: float
    retry_max_delay: float
    retry_max_pause: float
    tool_timeout: float | None
    reminders: bool
    compaction: bool
    summary_cooldown: float
    memory: bool
    memory_dir: str | os.PathLike[str] | None
    memory_limit: int
    user_limit: int
    memory_learning: bool
    recall: bool
    recall_limit: int
    embeddings_url: str | None
    embeddings_model: str | None
    embeddings_api_key: str | None
    skills: bool
    trust_project_files: bool
    skill_paths: list[str | os.PathLike[str]]
    cache_dir: str | os.PathLike[str] | None
    data_dir: str | os.PathLike[str] | None


FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(Settings))
DEFAULTS = Settings()  # read-only: the one place code outside this module takes a default from


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
                  environ: typing.Mapping[str, str] | None = None,
                  source: str = "Agent()") -> Settings:
    """Merge every source into one validated `Settings`; a bad key or value raises a one-line
    `ConfigError` naming where it came from (the file, variable or `source` of `overrides`)."""
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    project = project_config_path(cwd)
    for path in config_paths(cwd):
        if path.is_file():
            table = _read_project(path, merged) if path == project else _read_toml(path)
            merged.update(table)
            origin.update(dict.fromkeys(table, str(path)))
    env = _read_env(os.environ if environ is None else environ)
    merged.update(env)
    origin.update({name: ENV_PREFIX + name.upper() for name in env})
    given = {key: value for key, value in (overrides or {}).items() if value is not None}
    check_names(given, source)
    merged.update(given)
    origin.update(dict.fromkeys(given, source))
    return Settings(**_validated(merged, origin))


def _validated(values: dict[str, Any], origin: dict[str, str]) -> dict[str, Any]:
    """`values` checked against their settings' types (strict); the first bad one raises."""
    from pydantic import ValidationError

    out: dict[str, Any] = {}
    failures: list[tuple[str, ValidationError]] = []
    for name, value in values.items():
        try:
            out[name] = _validator(name).validate_python(value)
        except ValidationError as exc:
            failures.append((name, exc))
    if failures:
        name, first = failures[0]
        more = sum(failure.error_count() for _, failure in failures) - 1
        raise ConfigError(_one_line(name, first, values, origin, more)) from None
    return out


@functools.cache
def _validator(name: str) -> TypeAdapter[Any]:
    """One setting's pydantic validator, built the first time a value is given for it (building
    all of them is a third of the import time a library user would otherwise pay)."""
    from pydantic import ConfigDict, TypeAdapter

    hint = _pydantic_hint(_hints()[name])
    return TypeAdapter(hint, config=ConfigDict(strict=True, extra="forbid",
                                               arbitrary_types_allowed=True))


@functools.cache
def _hints() -> dict[str, Any]:
    return typing.get_type_hints(Settings, include_extras=True)


def _pydantic_hint(hint: Any) -> Any:
    """`hint` with this module's markers (`_AtLeast`, `_Text`) as pydantic's own."""
    from pydantic import BeforeValidator, Field

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        marks = [Field(ge=item.ge) if isinstance(item, _AtLeast)
                 else BeforeValidator(_as_text) if isinstance(item, _Text) else item
                 for item in hint.__metadata__]
        return Annotated[(_pydantic_hint(args[0]), *marks)]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_pydantic_hint(arg) for arg in args)]  # noqa: UP007
    if origin in (list, dict):
        return origin[tuple(_pydantic_hint(arg) for arg in args)]
    return hint


def check_names(names: typing.Iterable[str], source: str) -> None:
    """Unknown setting names are an error that suggests the closest known one."""
    unknown = sorted(set(names) - FIELD_NAMES)
    if unknown:
        raise ConfigError(f"{source}: " + "; ".join(_unknown(name) for name in unknown))


def _unknown(name: str) -> str:
    import difflib  # only for a wrong name

    close = difflib.get_close_matches(name, sorted(FIELD_NAMES), n=1)
    hint = (f"did you mean {close[0]!r}?" if close
            else "the settings are the fields of loopwright.config.Settings")
    return f"unknown setting {name!r} ({hint})"


def _one_line(name: str, exc: ValidationError, values: dict[str, Any],
              origin: dict[str, str], more: int) -> str:
    error = exc.errors()[0]
    where = origin.get(name, "default")
    shown = json.dumps(values.get(name), default=repr)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    also = f" (and {more} more)" if more else ""
    return (f"{where}: {name} = {shown} is not valid: expected {_describe(_hints()[name])} "
            f"({error['msg']}){also}")


def _describe(hint: Any) -> str:
    """A type as a reader of the error wants it: `int >= 1 | None`, `'native' | 'prompt'`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        bounds = [f" >= {item.ge}" for meta in hint.__metadata__
                  for item in getattr(meta, "metadata", [meta]) if getattr(item, "ge", None)
                  is not None]
        return _describe(args[0]) + "".join(bounds)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_describe(arg) for arg in args)
    if origin is Literal:
        return " | ".join(repr(arg) for arg in args)
    if hint is type(None):
        return "None"
    if hint is Any:
        return "any value"
    if origin is not None:
        return f"{origin.__name__}[{', '.join(_describe(arg) for arg in args)}]"
    return getattr(hint, "__name__", str(hint))


def _read_project(path: Path, below: dict[str, Any]) -> dict[str, Any]:
    """The project file's settings that apply (all, if trusted with exactly these bytes)."""
    from loopwright.trust import apply_project_config

    if path.resolve() == (user_config_dir() / "loopwright.toml").resolve():
        return {}  # the user's own file, already read
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from exc
    base = {**dataclasses.asdict(Settings()), **below}
    return apply_project_config(path, data, _read_toml(path, data), base)


def _read_toml(path: Path, raw: bytes | None = None) -> dict[str, Any]:
    """The settings in one file (`raw`: its bytes, when the caller already read them)."""
    import tomllib  # only when there is a file to read

    try:
        text = path.read_text(encoding="utf-8") if raw is None else raw.decode("utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read config: {exc}") from exc
    table = data.get("loopwright", data)
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [loopwright] must be a table of settings")
    check_names(table, str(path))
    return dict(table)


def _read_env(environ: typing.Mapping[str, str]) -> dict[str, Any]:
    """`LOOPWRIGHT_*` variables: booleans and numbers converted when they parse, lists and tables
    JSON or (lists) comma-separated; the settings model rejects what is left wrong."""
    hints = typing.get_type_hints(Settings, include_extras=False)
    out: dict[str, Any] = {}
    for name in FIELD_NAMES:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is None or raw == "":
            continue
        out[name] = _coerce(name, raw, hints[name])
    return out


def _coerce(name: str, raw: str, hint: Any) -> Any:
    if raw in _literal_values(hint):  # `review=off`, `deferred_tools=auto`: the word, no list
        return raw
    kinds = _base_types(hint)
    if bool in kinds and raw.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        return raw.lower() in ("1", "true", "yes", "on")
    for kind in (int, float):
        if kind in kinds:
            with contextlib.suppress(ValueError):
                return kind(raw)
    if list in kinds or dict in kinds:
        if raw.lstrip().startswith(("[", "{")):
            try:
                return json.loads(raw)
            except ValueError as exc:
                raise ConfigError(f"{ENV_PREFIX}{name.upper()}={raw!r} is not valid JSON: "
                                  f"{exc}") from exc
        if list in kinds:
            return [part.strip() for part in raw.split(",") if part.strip()]
    return raw


def _literal_values(hint: Any) -> set[Any]:
    if typing.get_origin(hint) is Literal:
        return set(typing.get_args(hint))
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return set().union(*(_literal_values(arg) for arg in typing.get_args(hint)))
    return set()


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
