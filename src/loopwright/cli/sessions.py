"""`loopwright sessions`: list, show, search, export, resume and remove stored sessions.

The database is the one runs write to: `--db PATH`, else `store` from the settings
(`LOOPWRIGHT_STORE`, loopwright.toml), else `<data dir>/sessions.db` (`LOOPWRIGHT_DATA_DIR`).
Session ids may be given as any unique prefix.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer

from loopwright.cli.options import AgentFlags, with_agent_flags
from loopwright.cli.store import fail as _fail
from loopwright.cli.store import open_browser, store_path

if TYPE_CHECKING:
    from rich.console import Console

    from loopwright.attachments import Attachment
    from loopwright.messages import Message
    from loopwright.store import SessionInfo
    from loopwright.store.rows import DamagedSession
    from loopwright.store.sqlite import SQLiteStore

sessions_app = typer.Typer(
    name="sessions",
    help="List, show, search, export, resume and remove stored sessions.",
    no_args_is_help=True,
    add_completion=False,
)

DbOpt = Annotated[str | None, typer.Option(
    "--db", help="Session database: a file or a postgresql:// URL (default: the one runs write "
    "to, see LOOPWRIGHT_STORE and LOOPWRIGHT_DATA_DIR).")]
IdArg = Annotated[str, typer.Argument(help="Session id, or a unique prefix of one.",
                                      show_default=False)]
RESULT_LINES = 12  # lines of a tool result `show` prints unless --full
PAGE_SIZE = 50  # messages `show` prints per page
ALL_CHUNK = 500  # messages `show --all` reads at a time (a huge session never sits in memory)
PIPE_WIDTH = 160  # columns of tables written to a pipe or file
P = ParamSpec("P")
R = TypeVar("R")


def _open(db: str | None, *, must_exist: bool = True) -> SQLiteStore | None:
    """The store, closed when the command ends (a PostgreSQL one holds a connection and an
    event loop in a thread of its own), or None when its file does not exist (and
    `must_exist` is False)."""
    from loopwright.errors import LoopwrightError

    path = store_path(db)
    if isinstance(path, Path) and not path.exists():
        if must_exist:
            _fail(f"no session database at {path} (no run has been saved there yet)")
        return None
    try:
        store = open_browser(path)
    except LoopwrightError as exc:
        _fail(str(exc))
    opened = _OPENED.get()
    if opened is not None:
        opened.callback(store.close)
    return store


_OPENED: contextvars.ContextVar[contextlib.ExitStack | None] = contextvars.ContextVar(
    "loopwright_sessions_opened", default=None)


def _closing_its_store(command: Callable[P, R]) -> Callable[P, R]:
    """`command` with the store `_open` gives it closed when it ends, however it ends."""

    @functools.wraps(command)
    def closing(*args: P.args, **kwargs: P.kwargs) -> R:
        with contextlib.ExitStack() as opened:
            token = _OPENED.set(opened)
            try:
                return command(*args, **kwargs)
            finally:
                _OPENED.reset(token)

    return closing


@contextlib.contextmanager
def _damage_reported() -> Iterator[None]:
    """A damaged row (or a store error) ends the command with what to do, not a traceback."""
    from loopwright.errors import LoopwrightError

    try:
        yield
    except LoopwrightError as exc:
        _fail(str(exc))


def _resolve(store: SQLiteStore, prefix: str) -> str:
    from loopwright.errors import SessionError

    try:
        return store.resolve(prefix)
    except SessionError as exc:
        _fail(str(exc))


# --- commands ------------------------------------------------------------------------------------


@sessions_app.command("list")
@_closing_its_store
def list_sessions(
    here: Annotated[bool, typer.Option("--here", help="Only sessions run in this directory.")]
    = False,
    cwd: Annotated[Path | None, typer.Option("--cwd", help="Only sessions run in DIR.")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Only this model.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most N sessions.")] = 20,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object per line.")]
    = False,
    db: DbOpt = None,
) -> None:
    """Recent sessions first. A damaged session is left out and named on stderr, one line each
    (with --json, also as a last line `{"damaged": [{"id": ..., "error": ...}]}`); the exit
    status stays 0, as the sessions that can be read are all listed."""
    store = _open(db, must_exist=False)
    directory = Path.cwd() if here else cwd
    damaged: list[DamagedSession] = []
    with _damage_reported():
        found = [] if store is None else store.list_sessions(
            cwd=str(directory.resolve()) if directory else None, model=model, limit=limit,
            damaged=damaged)
    if json_output:
        from loopwright.events import safe_json

        for info in found:
            print(safe_json(json.dumps(info.to_dict(), ensure_ascii=False)))
        if damaged:
            print(safe_json(json.dumps({"damaged": [one.to_dict() for one in damaged]},
                                       ensure_ascii=False)))
    elif not found:
        _console().print("No sessions found.")
    else:
        _console().print(_sessions_table(found))
    _print_damaged(damaged)


def _print_damaged(damaged: list[DamagedSession]) -> None:
    """One line on stderr for each damaged session a listing or a search left out."""
    from loopwright.cli.inert import inert

    for one in damaged:  # its id is whatever the damaged row holds
        print(inert(f"skipped a damaged session: {one.error}"), file=sys.stderr)


@sessions_app.command("show")
@_closing_its_store
def show(
    session: IdArg,
    page: Annotated[int, typer.Option("--page", "-p", min=1, help=(
        "Which page of the transcript to print."))] = 1,
    page_size: Annotated[int, typer.Option("--page-size", min=1, help="Messages per page.")]
    = PAGE_SIZE,
    all_messages: Annotated[bool, typer.Option("--all", help="Print every message.")] = False,
    epoch: Annotated[int | None, typer.Option("--epoch", min=0, help=(
        "An earlier stretch of the conversation, from before a compaction (see 'lineage')."))]
    = None,
    turns: Annotated[bool, typer.Option("--turns", help="Also print what each turn cost.")]
    = False,
    events: Annotated[bool, typer.Option(
        "--events", help="Also print the audit log of tool calls and the event log.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Print tool results in full.")] = False,
    diffs: Annotated[bool, typer.Option(
        "--diffs", help="Also print the diff of the files each turn changed.")] = False,
    db: DbOpt = None,
) -> None:
    """The transcript of a session, a page at a time (and its lineage, sub-agents, turn costs,
    with --diffs its file changes and with --events its audit log)."""
    store = _open(db)
    assert store is not None
    sid = _resolve(store, session)
    with _damage_reported():
        _show(store, sid, epoch=epoch, page=None if all_messages else page,
              page_size=page_size, full=full, turns=turns, events=events, diffs=diffs)


def _show(store: SQLiteStore, sid: str, *, epoch: int | None, page: int | None,
          page_size: int, full: bool, turns: bool, events: bool, diffs: bool) -> None:
    info = store.get(sid)
    assert info is not None
    console = _console()
    _print_header(console, info)
    _print_lineage(console, store, info)
    _print_children(console, store, sid)
    system_prompt = store.system_prompt(sid)
    if system_prompt:
        console.print(f"[dim]system prompt: {len(system_prompt):,} chars[/dim]")
    if epoch is not None and epoch > info.epoch:
        _fail(f"session {sid} has epochs 0 to {info.epoch}; --epoch {epoch} does not exist")
    _print_transcript(console, store, sid, epoch=epoch, page=page, page_size=page_size,
                      full=full)
    if turns:
        _print_turns(console, store, sid)
    if diffs:
        _print_diffs(console, store, sid)
    if events:
        _print_audit(console, store, sid)
        _print_events(console, store, sid)


@sessions_app.command("search")
@_closing_its_store
def search(
    text: Annotated[str, typer.Argument(help="Words to find (all must match).",
                                        show_default=False)],
    here: Annotated[bool, typer.Option("--here", help="Only sessions run in this directory.")]
    = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most N hits.")] = 20,
    db: DbOpt = None,
) -> None:
    """Full-text search over every stored message, best matches first (a damaged session is
    left out and named on stderr, as `list` does)."""
    from rich.table import Table
    from rich.text import Text

    from loopwright.store.search import SNIPPET_END, SNIPPET_START

    store = _open(db, must_exist=False)
    cwd = str(Path.cwd().resolve()) if here else None
    damaged: list[DamagedSession] = []
    with _damage_reported():
        hits = [] if store is None else store.search(text, limit=limit, cwd=cwd,
                                                     damaged=damaged)
    console = _console()
    if not hits:
        console.print(f"No messages match {text!r}.")
        _print_damaged(damaged)
        return
    table = Table(box=None, show_edge=False, pad_edge=False)
    for column in ("session", "when", "role", "match", "title"):
        table.add_column(column, overflow="fold" if column == "match" else "ellipsis",
                         no_wrap=column != "match")
    for hit in hits:
        table.add_row(hit.session_id[:8], _when(hit.updated), hit.role,
                      _highlight(hit.snippet, SNIPPET_START, SNIPPET_END), Text(hit.title))
    console.print(table)
    _print_damaged(damaged)


@sessions_app.command("export")
@_closing_its_store
def export(
    session: IdArg,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write to FILE instead of stdout.")] = None,
    db: DbOpt = None,
) -> None:
    """The conversation as JSON lines in loopwright's message format (system prompt first). A
    call a crash cut off (in a session no run holds) is given the note a resume would give it,
    so a history read back from the file keeps the call's idempotency key in another session."""
    from loopwright.events import safe_json
    from loopwright.interrupted import close_interrupted_calls
    from loopwright.messages import messages_to_jsonl, system
    from loopwright.tools.idempotency import scope_mark

    store = _open(db)
    assert store is not None
    sid = _resolve(store, session)
    with _damage_reported():
        history = store.load(sid)
        system_prompt = store.system_prompt(sid)
        info = store.get(sid)
    if info is not None and info.locked_by is None:  # a running session's calls are running
        history = close_interrupted_calls(history, marks=frozenset({scope_mark(sid)}))
    if system_prompt:
        history = [system(system_prompt), *history]
    # the same JSON lines with C1 controls and lone surrogates escaped: neither a terminal
    # nor a UTF-8 file gets them raw
    text = safe_json(messages_to_jsonl(history))
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:  # a folder, a missing one, a full disk: what, not a traceback
            _fail(f"cannot write {output}: {exc.strerror}")
        print(f"wrote {len(history)} messages to {output}", file=sys.stderr)


@sessions_app.command("rm")
@_closing_its_store
def remove(
    sessions: Annotated[list[str], typer.Argument(help="Session ids or unique prefixes.",
                                                  show_default=False)],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
    = False,
    db: DbOpt = None,
) -> None:
    """Delete sessions with their messages, runs and events."""
    from loopwright.cli.inert import inert
    from loopwright.errors import SessionError

    store = _open(db)
    assert store is not None
    ids = [_resolve(store, prefix) for prefix in sessions]
    if not yes:
        titles = ", ".join(f"{sid[:8]} ({(store.get(sid) or _missing(sid)).title!r})"
                           for sid in ids)
        typer.confirm(f"Delete {titles}?", abort=True)
    for sid in ids:
        try:
            store.delete(sid)
        except SessionError as exc:
            _fail(str(exc))
        print(inert(f"deleted {sid}"), file=sys.stderr)  # an id another program wrote


@sessions_app.command("resume")
@with_agent_flags(exclude=("resume", "continue_last"))
def resume(session: IdArg, db: DbOpt = None, *, flags: AgentFlags) -> None:
    """Continue a session interactively (the same as `loopwright chat --resume ID`); the
    provider flags override the one the session used."""
    from loopwright.cli.chat import run_chat

    store = _open(db)
    assert store is not None
    sid = _resolve(store, session)
    store.close()
    flags.resume = sid
    raise typer.Exit(run_chat(flags, db=db))


# --- rendering -----------------------------------------------------------------------------------


def _console() -> Console:
    from loopwright.cli.inert import InertConsole

    console = InertConsole(highlight=False, soft_wrap=False)  # messages may hold escapes
    if not console.is_terminal:  # piped: whole rows beat a guessed 80-column cut
        console.width = max(console.width, PIPE_WIDTH)
    return console


def _missing(sid: str) -> NoReturn:
    _fail(f"no session {sid!r}")


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def _cost(cost: float | None) -> str:
    if cost is None:
        return "?"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def _sessions_table(found: list[SessionInfo]) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, show_edge=False, pad_edge=False)
    table.add_column("id", no_wrap=True)
    table.add_column("updated", no_wrap=True)
    table.add_column("title", overflow="ellipsis", no_wrap=True, max_width=48)
    table.add_column("model", overflow="ellipsis", no_wrap=True, max_width=24)
    table.add_column("msgs", justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("cost", justify="right")
    table.add_column("status", no_wrap=True)
    for info in found:
        table.add_row(info.id[:8], _when(info.updated), Text(info.title), Text(info.model),
                      str(info.message_count), f"{info.usage.total_tokens:,}", _cost(info.cost),
                      info.stop_reason or "-")
    return table


def _print_header(console: Console, info: SessionInfo) -> None:
    usage = info.usage
    lines = [
        f"[bold]session {info.id}[/bold]" + (f"  (sub-agent of {info.parent_id})"
                                              if info.parent_id else ""),
        f"title    {info.title}",
        f"model    {info.model}",
        f"cwd      {info.cwd}",
        f"created  {_when(info.created)}   updated {_when(info.updated)}",
        f"status   {info.stop_reason or '-'}   runs {info.runs}   messages {info.message_count}",
        f"usage    {usage.input_tokens:,} in ({usage.cache_read_tokens:,} cache read, "
        f"{usage.cache_write_tokens:,} cache write) · {usage.output_tokens:,} out "
        f"({usage.reasoning_tokens:,} reasoning) · {usage.requests} requests · "
        f"cost {_cost(info.cost)}",
    ]
    from rich.markup import escape

    console.print("\n".join([lines[0], *(escape(line) for line in lines[1:])]))
    console.rule(style="dim")


def _print_transcript(console: Console, store: SQLiteStore, sid: str, *, epoch: int | None,
                      page: int | None, page_size: int, full: bool) -> None:
    """One page of an epoch (default: the live one), or with `page=None` all of it in
    chunks; only what is printed is read and rendered."""
    total = store.message_count(sid, epoch=epoch)
    if page is None:
        for offset in range(0, total, ALL_CHUNK):
            for message in store.load_page(sid, epoch=epoch, offset=offset, limit=ALL_CHUNK):
                _print_message(console, message, full=full)
        return
    pages = max(1, -(-total // page_size))
    if page > pages:
        _fail(f"session {sid} has {pages} page(s) of {page_size} messages; --page {page} is "
              "past the end")
    start = (page - 1) * page_size
    for message in store.load_page(sid, epoch=epoch, offset=start, limit=page_size):
        _print_message(console, message, full=full)
    if pages > 1:
        end = min(total, start + page_size)
        more = f"--page {page + 1} for the next, " if page < pages else ""
        console.print(f"[dim]page {page} of {pages} (messages {start + 1:,}–{end:,} of "
                      f"{total:,}); {more}--all for everything[/dim]")


def _print_lineage(console: Console, store: SQLiteStore, info: SessionInfo) -> None:
    if not info.epoch:
        return
    parts = []
    for stretch in store.lineage(info.id):
        live = " (live)" if stretch.epoch == info.epoch else ""
        parts.append(f"epoch {stretch.epoch}{live}: {stretch.messages:,} messages from "
                     f"{_when(stretch.first)}")
    console.print(f"[bold]lineage[/bold]  compacted {info.epoch}× — " + " · ".join(parts)
                  + " [dim](--epoch N shows an earlier one)[/dim]")


def _print_children(console: Console, store: SQLiteStore, sid: str) -> None:
    from rich.markup import escape

    children = store.children(sid)
    if not children:
        return
    console.print("[bold]sub-agents[/bold]")
    for child in children:
        console.print(escape(f"  {child.id[:8]}  {child.stop_reason or '-':<11} "
                             f"{child.message_count:>5} msgs  {_cost(child.cost):>8}  "
                             f"{child.title}"))
    console.rule(style="dim")


def _print_turns(console: Console, store: SQLiteStore, sid: str) -> None:
    from rich.table import Table

    table = Table(title="turns", box=None, show_edge=False, pad_edge=False,
                  title_justify="left", title_style="bold")
    for column in ("run", "turn", "in", "cache read", "out", "requests", "cost"):
        table.add_column(column, justify="left" if column == "run" else "right")
    for row in store.turns(sid):
        table.add_row(row["run_id"][:8], str(row["turn"]), f"{row['input_tokens']:,}",
                      f"{row['cache_read_tokens']:,}", f"{row['output_tokens']:,}",
                      str(row["requests"]), _cost(row["cost"]))
    console.print(table)
    console.print()


def _print_message(console: Console, message: Message, *, full: bool) -> None:
    from rich.text import Text

    if message.role == "user":
        console.print(Text("user", style="bold cyan"))
        console.print(Text(message.content))
    elif message.role == "assistant":
        console.print(Text("assistant", style="bold green"))
        if message.reasoning:
            console.print(Text(message.reasoning, style="dim italic"))
        if message.content:
            console.print(Text(message.content))
        for call in message.tool_calls:
            console.print(Text(f"→ {call.name}({call.arguments})", style="yellow"))
    elif message.role == "tool":
        style = "red" if message.is_error else "dim"
        content = message.content if full else _clip_lines(message.content, RESULT_LINES)
        console.print(Text(f"← {message.name or 'tool'}", style=f"bold {style}"))
        console.print(Text(content, style=style))
    else:
        console.print(Text(message.role, style="bold magenta"))
        console.print(Text(message.content))
    for attachment in message.attachments:
        _print_attachment(console, attachment)
    console.print()


_STATE_STYLES = {"same": "green", "changed": "yellow", "gone": "red", "remote": "dim"}


def _print_attachment(console: Console, attachment: Attachment) -> None:
    """One line: the attachment's name, size and whether it still holds what was attached,
    read as a resumed session would read it (`Attachment.standing`)."""
    from rich.text import Text

    standing = attachment.standing()
    where = attachment.url or attachment.path or "kept in the session"
    size = "" if standing.size is None else f"{standing.size:,} bytes  "
    line = Text(f"  attachment {attachment.filename}  {attachment.media_type}  {size}",
                style="dim")
    line.append(standing.state, style=_STATE_STYLES[standing.state])
    line.append(f": {standing.why}" if standing.why else "", style="dim")
    line.append(f"  ({where})", style="dim")
    console.print(line, soft_wrap=True)  # a path cut in two could not be copied


def _print_audit(console: Console, store: SQLiteStore, sid: str) -> None:
    from rich.table import Table
    from rich.text import Text

    table = Table(title="tool calls", box=None, show_edge=False, pad_edge=False,
                  title_justify="left", title_style="bold")
    for column in ("run", "time", "tool", "arguments", "result", "seconds", "error", "decision"):
        table.add_column(column, overflow="fold" if column == "arguments" else "ellipsis")
    for entry in store.audit(sid):
        arguments = (entry.arguments if isinstance(entry.arguments, str)
                     else json.dumps(entry.arguments, ensure_ascii=False))
        table.add_row(
            entry.run_id[:8], time.strftime("%H:%M:%S", time.localtime(entry.created)),
            Text(entry.name), Text(arguments),
            "-" if entry.size is None else f"{entry.size:,} chars",
            "-" if entry.duration is None else f"{entry.duration:.3f}",
            {None: "-", True: "yes", False: "no"}[entry.is_error], Text(entry.decision))
    console.print(table)
    console.print()


def _print_diffs(console: Console, store: SQLiteStore, sid: str) -> None:
    """Each turn's file changes (its `turn_diff` status), coloured on a terminal."""
    from rich.text import Text

    from loopwright.cli.render import diff_renderable

    shown = False
    for event in store.events(sid):
        data = event.get("data")
        if event.get("type") != "status" or event.get("kind") != "turn_diff" or not (
                isinstance(data, dict) and isinstance(data.get("diff"), str)):
            continue
        stamp = time.strftime("%H:%M:%S", time.localtime(event["created"]))
        console.print(Text(f"{stamp} {str(event['run_id'])[:8]} {event.get('message', '')}",
                           style="bold"))
        console.print(diff_renderable(data["diff"], terminal=console.is_terminal))
        shown = True
    if not shown:
        console.print("[dim]no file changes recorded[/dim]")
    console.print()


def _print_events(console: Console, store: SQLiteStore, sid: str) -> None:
    from rich.markup import escape

    console.print("[bold]events[/bold]")
    for event in store.events(sid):
        stamp = time.strftime("%H:%M:%S", time.localtime(event.pop("created")))
        run_id = event.pop("run_id")
        kind = event.pop("type")
        # a status note is said whole (it may end with what to do); only raw data is cut
        said = f"{event.pop('kind', '')}: {event.pop('message', '')} " if kind == "status" else ""
        detail = json.dumps(event, ensure_ascii=False, default=str)
        if len(detail) > 200:
            detail = detail[:199] + "…"
        console.print(escape(f"{stamp} {run_id[:8]} {kind:<12} {said}{detail}"))


def _clip_lines(text: str, lines: int) -> str:
    parts = text.splitlines()
    if len(parts) <= lines:
        return text
    return "\n".join(parts[:lines]) + f"\n… ({len(parts) - lines} more lines; --full shows all)"


def _highlight(snippet: str, start: str, end: str) -> Any:
    from rich.text import Text

    text = Text()
    rest = " ".join(snippet.split())
    while start in rest:
        before, _, after = rest.partition(start)
        marked, _, rest = after.partition(end)
        text.append(before)
        text.append(marked, style="bold yellow")
    text.append(rest)
    return text
