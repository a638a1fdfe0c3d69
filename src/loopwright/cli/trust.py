"""`loopwright trust [DIR]`: let a project's loopwright.toml loosen safety and its instruction
files and skills reach the prompt; `--list`, `--revoke`.

Until a directory is trusted, its loopwright.toml may not approve everything, add hooks, allow
rules, MCP servers, widen the sandbox, raise limits and so on, and its AGENTS.md (and the like)
and skills are not loaded (see `loopwright.trust`). Trust is recorded with one SHA-256 over those
files, so editing any of them takes it away again. Exit codes: 0 done, 1 nothing to do
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
    """Trust a project: its loopwright.toml's loosening settings (approve_all, hooks, allow
    rules, MCP servers, sandbox, higher limits…) apply and its instruction files (AGENTS.md…)
    and skills are loaded, until any of these files changes."""
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
    from loopwright.trust import LOOSENING, PROJECT_FILE, project_content, project_digest

    if not project.is_dir():
        where = (f"{project} is a file: trust the directory it is in (loopwright trust "
                 f"{project.parent})" if project.exists() else f"there is no directory {project}")
        typer.echo(f"loopwright: {where}", err=True)
        raise typer.Exit(EXIT_NOTHING)
    content = project_content(project)
    data: bytes | None = None
    table: dict[str, object] = {}
    if content.config is not None:
        try:
            data = content.config.read_bytes()
            table = tomllib.loads(data.decode("utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read {content.config}: {exc.strerror}") from exc
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{content.config} is not valid TOML ({exc}); fix it before "
                              "trusting it") from exc
        inner = table.get("loopwright", table)
        table = inner if isinstance(inner, dict) else {}
    elif not content.prompt_files:
        typer.echo(f"loopwright: there is no {PROJECT_FILE}, instruction file or skill in "
                   f"{project}; nothing to trust", err=True)
        raise typer.Exit(EXIT_NOTHING)
    entry = store.trust(project, project_digest(project, config=data, content=content))
    covered = [PROJECT_FILE] * (data is not None) + [
        str(path.relative_to(project)) if path.is_relative_to(project) else str(path)
        for path in content.prompt_files]
    typer.echo(f"Trusted {project} (sha256 {entry.sha256[:12]}… over {', '.join(covered)}).")
    loosening = sorted(key for key in table if key in LOOSENING or key == "policy")
    if loosening:
        typer.echo(f"Its settings that need trust now apply: {', '.join(loosening)}.")
    if content.prompt_files:
        typer.echo("Its instruction files and skills are now loaded into the prompt.")
    typer.echo("Editing any of these files takes the trust away; `loopwright trust --revoke` "
               "ends it.")


def _revoke(store: TrustStore, project: Path) -> None:
    if not store.revoke(project):
        typer.echo(f"loopwright: {project} was not trusted", err=True)
        raise typer.Exit(EXIT_NOTHING)
    typer.echo(f"No longer trusted: {project}")


def _list(store: TrustStore) -> None:
    from loopwright.trust import PROJECT_FILE, project_content, project_digest

    entries = store.entries()
    if not entries:
        typer.echo("No trusted projects. Run `loopwright trust` in a project to trust its "
                   f"{PROJECT_FILE}.")
        return
    for directory, entry in sorted(entries.items()):
        content = project_content(Path(directory))
        if content.config is None and not content.prompt_files:
            status = "missing"
        else:
            current = project_digest(Path(directory), content=content)
            status = "trusted" if current == entry.sha256 else "changed (not trusted)"
        typer.echo(f"{status:<22} {directory}  sha256 {entry.sha256[:12]}…  {entry.trusted_at}")
