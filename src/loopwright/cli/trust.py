"""`loopwright trust [DIR]`: let a project's loopwright.toml loosen safety; `--list`, `--revoke`.

Until a directory is trusted, its loopwright.toml may not approve everything, add hooks, allow
rules, MCP servers, widen the sandbox and so on (see `loopwright.trust`). Trust is recorded with
the file's SHA-256, so editing the file takes it away again. Exit codes: 0 done, 1 nothing to do
(no file, not trusted), 6 a file that cannot be read.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from loopwright.trust import TrustStore

EXIT_NOTHING = 1
EXIT_CONFIG = 6


def trust_command(
    directory: Annotated[Path | None, typer.Argument(
        help="The project directory (default: the current one).", show_default=False)] = None,
    list_: Annotated[bool, typer.Option(
        "--list", help="List the trusted directories and whether each file is unchanged.")] = False,
    revoke: Annotated[bool, typer.Option(
        "--revoke", help="Stop trusting the directory.")] = False,
) -> None:
    """Trust a project's loopwright.toml: its approve_all, hooks, allow rules, MCP servers,
    sandbox and other loosening settings then apply, until the file changes."""
    from loopwright.errors import ConfigError
    from loopwright.trust import TrustStore

    store = TrustStore()
    try:
        if list_:
            _list(store)
        elif revoke:
            _revoke(store, _project(directory))
        else:
            _trust(store, _project(directory))
    except ConfigError as exc:
        typer.echo(f"loopwright: {exc}", err=True)
        raise typer.Exit(EXIT_CONFIG) from None


def _project(directory: Path | None) -> Path:
    return (directory or Path.cwd()).expanduser().resolve()


def _trust(store: TrustStore, project: Path) -> None:
    from loopwright.errors import ConfigError
    from loopwright.trust import LOOSENING, PROJECT_FILE, digest

    path = project / PROJECT_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        typer.echo(f"loopwright: there is no {PROJECT_FILE} in {project}; nothing to trust",
                   err=True)
        raise typer.Exit(EXIT_NOTHING) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it before trusting it") from exc
    table = table.get("loopwright", table)
    entry = store.trust(project, digest(data))
    loosening = sorted(key for key in table if key in LOOSENING or key == "policy")
    typer.echo(f"Trusted {project} ({PROJECT_FILE} sha256 {entry.sha256[:12]}…).")
    if loosening:
        typer.echo(f"Its settings that need trust now apply: {', '.join(loosening)}.")
    typer.echo("Editing the file takes the trust away; `loopwright trust --revoke` ends it.")


def _revoke(store: TrustStore, project: Path) -> None:
    if not store.revoke(project):
        typer.echo(f"loopwright: {project} was not trusted", err=True)
        raise typer.Exit(EXIT_NOTHING)
    typer.echo(f"No longer trusted: {project}")


def _list(store: TrustStore) -> None:
    from loopwright.trust import PROJECT_FILE, digest

    entries = store.entries()
    if not entries:
        typer.echo("No trusted projects. Run `loopwright trust` in a project to trust its "
                   f"{PROJECT_FILE}.")
        return
    for directory, entry in sorted(entries.items()):
        try:
            current = digest((Path(directory) / PROJECT_FILE).read_bytes())
        except OSError:
            status = "missing"
        else:
            status = "trusted" if current == entry.sha256 else "changed (not trusted)"
        typer.echo(f"{status:<22} {directory}  sha256 {entry.sha256[:12]}…  {entry.trusted_at}")
