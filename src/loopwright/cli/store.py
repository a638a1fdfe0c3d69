"""Where the CLI's sessions live: the database `run`/`chat` write to and `sessions` reads, and
finding the session `--resume PREFIX` / `--continue` mean.

The database is `--db PATH`, else `store` from the settings (`LOOPWRIGHT_STORE`, loopwright.toml),
else `<data dir>/sessions.db` (`LOOPWRIGHT_DATA_DIR`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

import typer

if TYPE_CHECKING:
    from loopwright.store.sqlite import SQLiteStore

EXIT_NOT_FOUND = 1


def store_path(db: str | Path | None = None) -> Path | str:
    """The database the CLI reads and runs write to: a file, or a postgresql:// URL."""
    from loopwright.config import load_settings
    from loopwright.errors import ConfigError
    from loopwright.store import DB_FILENAME, default_store_path

    if isinstance(db, str) and is_url(db):
        return db.strip()
    if db is not None:
        db = Path(db).expanduser()
        return db / DB_FILENAME if db.is_dir() else db
    try:
        settings = load_settings()
    except ConfigError as exc:
        fail(str(exc))
    spec = settings.store
    if isinstance(spec, str) and is_url(spec):
        return spec.strip()
    if isinstance(spec, str) and spec.strip().lower() not in (
            "", "none", "false", "0", "off", "no", "default", "true", "1", "on", "yes"):
        path = Path(spec).expanduser()
        return path / DB_FILENAME if path.is_dir() else path
    return default_store_path(settings.data_dir)


def fail(message: str) -> NoReturn:
    print(f"loopwright: {message}", file=sys.stderr)
    raise typer.Exit(EXIT_NOT_FOUND)


def is_url(spec: str) -> bool:
    return spec.strip().lower().startswith(("postgresql://", "postgres://"))


def open_browser(location: Path | str) -> SQLiteStore:
    """A blocking store on `location`: the SQLite file itself, or a PostgreSQL database through
    `BlockingStore` (the same methods, forwarded; typed as the SQLite store they mirror)."""
    from loopwright.store.sqlite import SQLiteStore

    if isinstance(location, Path):
        return SQLiteStore(location)
    from loopwright.store.blocking import BlockingStore
    from loopwright.store.postgres import PostgresStore

    browser = BlockingStore(PostgresStore(location))
    try:
        browser.get("")  # connect now: a wrong URL fails here, with its reason
    except BaseException:
        browser.close()
        raise
    return cast("SQLiteStore", browser)


def find_session(prefix: str | None, *, workdir: Path | None = None,
                 db: str | None = None) -> str:
    """The full id for `--resume PREFIX`, or with no prefix the latest session in `workdir`
    (`--continue`). Raises `typer.BadParameter` with the reason when there is none."""
    from loopwright.errors import LoopwrightError

    flag = "--resume" if prefix else "--continue"
    path = store_path(db)
    if isinstance(path, Path) and not path.exists():
        raise typer.BadParameter(f"no saved sessions yet ({path} does not exist)", param_hint=flag)
    try:
        with open_browser(path) as store:
            if prefix:
                return store.resolve(prefix)
            cwd = str((workdir or Path.cwd()).resolve())
            latest = store.latest(cwd=cwd)
    except LoopwrightError as exc:
        raise typer.BadParameter(str(exc), param_hint=flag) from exc
    if latest is None:
        raise typer.BadParameter(f"no saved session in {cwd}", param_hint=flag)
    return latest.id


def cli_store_default() -> bool | None:
    """`True` (persist to the default database) unless the settings say where or whether to."""
    from loopwright.config import load_settings
    from loopwright.errors import ConfigError

    try:
        return True if load_settings().store is None else None
    except ConfigError:
        return None  # the run reports a broken configuration itself, with its own exit code


def stored_provider(session_id: str, *, db: str | None = None) -> dict[str, str]:
    """The provider a stored session ran against — `model`, `base_url`, `api_mode` (never a
    key) — for `--resume`/`--continue`; empty when the session predates that record."""
    from loopwright.errors import LoopwrightError

    try:
        with open_browser(store_path(db)) as store:
            info = store.get(session_id)
    except LoopwrightError:
        return {}
    if info is None or not info.model or not info.base_url:
        return {}
    found = {"model": info.model, "base_url": info.base_url, "api_mode": info.api_mode}
    if "***" in info.base_url:  # stored without its credentials (endpoints.base.shown_url)
        if not os.environ.get("LOOPWRIGHT_BASE_URL"):
            raise typer.BadParameter(
                f"session {session_id[:8]} ran against {info.base_url}, whose credentials are "
                "not stored: resume it with --base-url and the URL with its credentials",
                param_hint="--resume")
        del found["base_url"]  # the environment's, credentials and all
    return {key: value for key, value in found.items() if value}
