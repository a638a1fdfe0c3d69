"""Where settings come from, and their validation: every setting (`settings.py`) is an `Agent`
argument, a `loopwright.toml` key and a `LOOPWRIGHT_*` variable.

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

from typing_extensions import is_typeddict

from loopwright.errors import ConfigError
from loopwright.settings import (
    CONCERN_OF,
    CONCERNS,
    FIELD_NAMES,
    AtLeast,
    NonEmpty,
    Settings,
    TextOrPath,
)

if TYPE_CHECKING:
    from pydantic import TypeAdapter, ValidationError

ENV_PREFIX = "LOOPWRIGHT_"


def _as_text(value: Any) -> Any:
    """Paths may be given as `Path` objects; settings keep them as text."""
    return os.fspath(value) if isinstance(value, os.PathLike) else value


def user_config_dir() -> Path:
    """The user's own config directory (`$XDG_CONFIG_HOME/loopwright`, `~/.config/loopwright`)."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "loopwright"


def config_paths(cwd: Path | None = None) -> list[Path]:
    """Config files in increasing precedence."""
    paths = [user_config_dir() / "loopwright.toml", project_config_path(cwd)]
    explicit = _named_config()
    if explicit is not None:
        paths.append(explicit)
    return paths


def _named_config() -> Path | None:
    """The file `LOOPWRIGHT_CONFIG` names, if it names one."""
    explicit = os.environ.get(ENV_PREFIX + "CONFIG")
    return Path(explicit) if explicit else None


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
        if path.is_dir():  # skipped, its settings would be silently missing
            raise ConfigError(f"{path} is a directory, not a settings file: rename or remove it "
                              "(settings are read from a file of that name)")
        if path.is_file():
            table = _read_project(path, merged) if path == project else _read_toml(path)
            merged.update(table)
            origin.update(dict.fromkeys(table, str(path)))
        elif path == _named_config():  # asked for by name: its settings would be missing
            raise ConfigError(f"{ENV_PREFIX}CONFIG names {path}, which does not exist: create "
                              f"it, or unset {ENV_PREFIX}CONFIG")
    env = _read_env(os.environ if environ is None else environ)
    _warn_misspelt(os.environ if environ is None else environ)
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
    """`hint` with the markers of `settings.py` (`AtLeast`, `NonEmpty`, `TextOrPath`) as
    pydantic's own."""
    from pydantic import BeforeValidator, Field

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        marks = [Field(ge=item.ge) if isinstance(item, AtLeast)
                 else Field(min_length=1) if isinstance(item, NonEmpty)
                 else BeforeValidator(_as_text) if isinstance(item, TextOrPath) else item
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
            else "the settings are the fields of loopwright.settings.Settings")
    return f"unknown setting {name!r} ({hint})"


def check_model_prefix(model: str | None, base_url: str | None, *, named: str = "model",
                       aliases: typing.Collection[str] = ()) -> None:
    """A `provider:model` whose provider is misspelt (`anthorpic:claude-x`) is a `ConfigError`
    that names the provider meant, not a request to the default provider without its key.
    Only a near spelling counts (one typo, two in a long name), and never a prefix with a digit:
    `llama3:8b` and `qwen2.5:7b` are a model and its tag. With a `base_url` (or an alias of
    that name) the name is not a provider's. `named`: how the error calls the setting."""
    from loopwright.endpoints.resolve import PROVIDERS

    prefix, sep, rest = (model or "").partition(":")
    typed = prefix.lower()
    if (not sep or not rest or base_url or typed in PROVIDERS or model in aliases
            or any(char.isdigit() for char in typed)):
        return
    meant = [name for name in PROVIDERS if _typos(typed, name) <= (2 if len(name) >= 8 else 1)]
    if meant:
        raise ConfigError(f"unknown provider {prefix!r} in {named} {model}: did you mean "
                          f"{meant[0]}:{rest}? (known providers: {', '.join(PROVIDERS)})")


def _typos(a: str, b: str) -> int:
    """Edits from `a` to `b`: a letter added, dropped, changed, or two swapped."""
    rows = [list(range(len(b) + 1))]
    for i, char_a in enumerate(a, start=1):
        row = [i]
        for j, char_b in enumerate(b, start=1):
            cost = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (char_a != char_b))
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                cost = min(cost, rows[-2][j - 2] + 1)
            row.append(cost)
        rows.append(row)
    return rows[-1][-1]


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
    flat = _ungrouped(table, path)
    check_names(flat, str(path))
    return flat


def _ungrouped(table: dict[str, Any], path: Path) -> dict[str, Any]:
    """`table` with its groups read as their keys: settings may sit in a table named by their
    concern (`[sandbox]`, `[loopwright.review]`: the sections of docs/settings.md), and only
    there. A setting named like a concern (`model`, `review`, `memory`) never takes a table as
    its value, so a table under such a name is a group."""
    groups = {concern.key: concern for concern in CONCERNS}
    flat = {key: value for key, value in table.items()
            if key not in groups or not isinstance(value, dict)}
    for key, group in table.items():
        if key in flat:
            continue
        check_names(group, f"{path}: [{key}]")
        for name, value in group.items():
            if CONCERN_OF[name] is not groups[key]:
                raise ConfigError(f"{path}: [{key}] holds {name!r}, a setting of "
                                  f"[{CONCERN_OF[name].key}]")
            if name in flat:
                raise ConfigError(f"{path}: {name!r} is set twice (once in [{key}])")
            flat[name] = value
    return flat


class UnknownVariableWarning(UserWarning):
    """A `LOOPWRIGHT_*` variable that is no setting but spelt like one: it is ignored."""


# `LOOPWRIGHT_*` variables that are read but are not settings (`URL_ENV`'s `_URL` ones neither)
_NOT_SETTINGS = frozenset({"CONFIG", "DATA_DIR", "MODELS_DIR", "LOCAL_THREADS", "SERVE_TOKEN"})


def _warn_misspelt(environ: typing.Mapping[str, str]) -> None:
    """`LOOPWRIGHT_MAX_TURN=5` was silently ignored: a variable spelt like a setting that is not
    one is named, with the setting meant. One not close to any is left alone (a tool's own)."""
    import difflib
    import warnings

    for key in environ:
        if not key.startswith(ENV_PREFIX):
            continue
        name = key[len(ENV_PREFIX):]
        if (name.lower() in FIELD_NAMES or name in _NOT_SETTINGS
                or (name.endswith("_URL") and name != "BASE_URL")):
            continue
        close = difflib.get_close_matches(name.lower(), sorted(FIELD_NAMES), n=1, cutoff=0.85)
        if close:
            warnings.warn(f"{key} is not a setting and is ignored: did you mean "
                          f"{ENV_PREFIX}{close[0].upper()}?", UnknownVariableWarning,
                          stacklevel=3)


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
    if is_typeddict(hint):  # `usage_limits`: a table with named keys
        return {dict}
    return {origin or hint}
