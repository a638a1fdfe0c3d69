"""`loopwright memory list|show|rm`: the entries of MEMORY.md (ids M1, M2, …) and USER.md
(U1, U2, …) in the memory directory the settings name, and where learned ones came from.

Exit code 0, 1 for an unknown id, 6 for a configuration error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from loopwright.builtin.memory import MemoryFiles, Target

EXIT_MISSING = 1
EXIT_CONFIG = 6
PREFIXES: dict[str, Target] = {"M": "memory", "U": "user"}

memory_app = typer.Typer(
    help="Memory: the entries of MEMORY.md and USER.md, saved by the model or learned.",
    no_args_is_help=True,
    add_completion=False,
)


@memory_app.command("list")
def list_command(
    json_output: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object per entry.")] = False,
) -> None:
    """List every memory entry with its id (M… for MEMORY.md, U… for USER.md)."""
    from loopwright.cli.inert import escape_controls  # an entry may hold a terminal escape
    from loopwright.events import safe_json

    files = _files()
    rows = [(entry_id, target, text) for entry_id, target, text in _entries(files)]
    if json_output:
        for entry_id, target, text in rows:
            typer.echo(safe_json(json.dumps(_row(entry_id, target, text), ensure_ascii=False)))
        return
    if not rows:
        typer.echo(f"No memory entries in {files.directory}.")
        return
    for entry_id, _target, text in rows:
        first = escape_controls(text.splitlines()[0] if text else "")
        typer.echo(f"{entry_id:<4} {first[:110]}{'…' if len(first) > 110 else ''}")


@memory_app.command("show")
def show_command(entry_id: Annotated[str, typer.Argument(help="An id from `memory list`.")]
                 ) -> None:
    """Show one entry in full, with its file and the session it was learned in."""
    from loopwright.cli.inert import escape_controls

    files = _files()
    target, text = _find(files, entry_id)
    row = _row(entry_id.upper(), target, text)
    typer.echo(f"{row['id']} in {files.files[target].path}"
               + (f", learned in session {row['session']}" if row["session"] else ""))
    typer.echo(escape_controls(text, keep_newlines=True))  # an entry may hold a terminal escape


@memory_app.command("rm")
def rm_command(entry_id: Annotated[str, typer.Argument(help="An id from `memory list`.")]
               ) -> None:
    """Remove one entry."""
    files = _files()
    target, text = _find(files, entry_id)
    if not files.remove_entry(target, text):  # changed since it was read
        typer.echo(f"{entry_id.upper()} changed meanwhile; list again", err=True)
        raise typer.Exit(EXIT_MISSING)
    typer.echo(f"Removed {entry_id.upper()} from {files.files[target].name}.")


def _files() -> MemoryFiles:
    from loopwright.builtin.memory import memory_files_for
    from loopwright.config import load_settings
    from loopwright.errors import ConfigError

    try:
        s = load_settings()
    except ConfigError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(EXIT_CONFIG) from None
    workdir = Path(s.workdir).expanduser() if s.workdir else Path.cwd()
    return memory_files_for(memory_dir=s.memory_dir, data_dir=s.data_dir, workdir=workdir,
                            memory_limit=s.memory_limit, user_limit=s.user_limit)


def _entries(files: MemoryFiles) -> list[tuple[str, Target, str]]:
    return [(f"{prefix}{n}", target, text) for prefix, target in PREFIXES.items()
            for n, text in enumerate(files.entries(target), start=1)]


def _find(files: MemoryFiles, entry_id: str) -> tuple[Target, str]:
    wanted = entry_id.strip().upper()
    for found_id, target, text in _entries(files):
        if found_id == wanted:
            return target, text
    from loopwright.cli.inert import escape_controls

    typer.echo(f"no memory entry {escape_controls(entry_id)!r}; `loopwright memory list` "
               "shows the ids", err=True)
    raise typer.Exit(EXIT_MISSING)


def _row(entry_id: str, target: str, text: str) -> dict[str, str | None]:
    from loopwright.builtin.memory import learned_session

    return {"id": entry_id, "file": target, "text": text, "session": learned_session(text)}
