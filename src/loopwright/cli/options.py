"""The flags `run`, `chat` and `sessions resume` share, declared once as the fields of `AgentFlags`.

`@with_agent_flags()` gives a command every field as a `--flag` and hands the command one
`flags: AgentFlags`; `flags.agent_options()` turns them into `Agent` keyword arguments.
"""

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

PROVIDER_PANEL = "Provider"
PROVIDER_FLAGS = ("model", "base_url", "api_key", "api_mode")
"""The flags that say which model to talk to, and how (a resumed session's stored provider
applies unless one of these overrides it)."""


class ApiMode(StrEnum):
    """The wire protocol to speak (default: resolved from the model and base URL)."""

    chat_completions = "chat_completions"
    responses = "responses"
    anthropic_messages = "anthropic_messages"


class SandboxChoice(StrEnum):
    """Where commands may write: nowhere, the workspace, or anywhere (no sandbox)."""

    read_only = "read-only"
    workspace_write = "workspace-write"
    full_access = "full-access"


class ToolCallFormat(StrEnum):
    """How tool calls travel: the API's native field, or `<tool_call>` blocks in text."""

    native = "native"
    prompt = "prompt"


@dataclass(kw_only=True)
class AgentFlags:
    """The command-line flags that become `Agent` keyword arguments (and how turns are shown)."""

    model: Annotated[str | None, typer.Option(
        "--model", "-m", rich_help_panel=PROVIDER_PANEL,
        help="Model, alias or provider:model, e.g. ollama:qwen2.5 "
        "(default: auto-detected from the environment and local servers).")] = None
    base_url: Annotated[str | None, typer.Option(
        "--base-url", rich_help_panel=PROVIDER_PANEL,
        help="API base URL, with or without /v1 (default: LOOPWRIGHT_BASE_URL).")] = None
    api_key: Annotated[str | None, typer.Option(
        "--api-key", rich_help_panel=PROVIDER_PANEL,
        help="API key (default: LOOPWRIGHT_API_KEY, or the provider's variable such as "
        "OPENAI_API_KEY).")] = None
    api_mode: Annotated[ApiMode | None, typer.Option(
        "--api-mode", rich_help_panel=PROVIDER_PANEL, help="Wire protocol.")] = None
    local: Annotated[bool, typer.Option(
        "--local", rich_help_panel=PROVIDER_PANEL,
        help="Run the embedded model (Qwen2.5-Coder 1.5B on llama.cpp, started for this "
        "command): no key, no server. Needs pip install 'loopwright[local]'; the 1.1 GB of "
        "weights are fetched once.")] = False
    show_reasoning: Annotated[bool, typer.Option(
        "--show-reasoning", help="Print the model's reasoning (dimmed, on stderr).")] = False
    output_lines: Annotated[int, typer.Option(
        "--output-lines", min=0, help="Lines of each command's output shown below it (0: "
        "none).")] = 4
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Show the whole output of every command.")] = False
    system: Annotated[str | None, typer.Option(
        "--system", help="Extra system instructions, or @FILE to read them from a file.")] = None
    workdir: Annotated[Path | None, typer.Option(
        "--workdir", exists=True, file_okay=False, help="Working directory for tools.")] = None
    max_turns: Annotated[int | None, typer.Option("--max-turns", min=1, help="Turn limit.")] = None
    no_stream: Annotated[bool, typer.Option(
        "--no-stream", help="Ask for whole replies instead of streamed ones.")] = False
    tools: Annotated[str | None, typer.Option(
        "--tools", help="Comma-separated built-in tools to offer, e.g. read_file,grep.")] = None
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="Offer only built-in tools that change nothing.")] = False
    yes: Annotated[bool, typer.Option(
        "--yes", "-y", help="Approve every tool call that would ask for approval (not a "
        "network host off egress_allow: that is still asked, or refused off a terminal).")] = False
    sandbox: Annotated[SandboxChoice | None, typer.Option(
        "--sandbox", help="Command sandbox: read-only, workspace-write (default) or full-access "
        "(no sandbox).")] = None
    resume: Annotated[str | None, typer.Option("--resume", help="Continue session ID.")] = None
    continue_last: Annotated[bool, typer.Option(
        "--continue", help="Continue the most recent session.")] = False
    rubric: Annotated[str | None, typer.Option(
        "--rubric", help="Grade the answer against this rubric (or @FILE) and revise it if "
        "needed.")] = None
    reasoning_effort: Annotated[str | None, typer.Option(
        "--reasoning-effort", help="Reasoning effort for models that have one (low, medium, "
        "high).")] = None
    temperature: Annotated[float | None, typer.Option(
        "--temperature", help="Sampling temperature.")] = None
    max_tokens: Annotated[int | None, typer.Option(
        "--max-tokens", min=1, help="Output-token limit per reply.")] = None
    context_window: Annotated[int | None, typer.Option(
        "--context-window", min=1, help="Context window in tokens (default: probed or known).")
    ] = None
    tool_call_format: Annotated[ToolCallFormat | None, typer.Option(
        "--tool-call-format", help="native, or prompt for models without native tool calls.")
    ] = None

    def agent_options(self, *, db: str | None = None) -> dict[str, Any]:
        """`Agent(**options)`; flags left unset are omitted so env and loopwright.toml apply.
        `db` (`sessions resume --db`) is the database the session is read from and saved to."""
        options: dict[str, Any] = {
            "model": self.model,
            "base_url": self.base_url,
            "api_key": self.api_key,
            "api_mode": self.api_mode.value if self.api_mode else None,
            "system_prompt": text_or_file(self.system, "--system"),
            "workdir": str(self.workdir) if self.workdir else None,
            "max_turns": self.max_turns,
            "stream": False if self.no_stream else None,
            "approve_all": True if self.yes else None,
            "sandbox_mode": self.sandbox.value if self.sandbox else None,
            "session_id": _session_flag(self.resume, self.continue_last, self.workdir, db),
            "store": _cli_store(db),
            "rubric": text_or_file(self.rubric, "--rubric"),
            "reasoning_effort": self.reasoning_effort,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "context_window": self.context_window,
            "tool_call_format": self.tool_call_format.value if self.tool_call_format else None,
            **_tool_options(self.tools, self.read_only),
        }
        if options["session_id"] and not (self.model or self.base_url):
            # a resumed session talks to the provider it ran against; --model/--base-url override
            from loopwright.cli.store import stored_provider

            stored = stored_provider(options["session_id"], db=db)
            options.update({key: options.get(key) or value for key, value in stored.items()})
        return {key: value for key, value in options.items() if value is not None}


def with_agent_flags(*, exclude: Collection[str] = ()) -> Callable[[Callable[..., Any]],
                                                                   Callable[..., Any]]:
    """Give a command every `AgentFlags` field (but `exclude`) as an option; the command takes
    them as one keyword argument `flags: AgentFlags`."""
    hints = typing.get_type_hints(AgentFlags, include_extras=True)
    fields = [f for f in dataclasses.fields(AgentFlags) if f.name not in exclude]
    flag_params = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                                     annotation=hints[f.name]) for f in fields]
    names = {f.name for f in fields}

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        own = inspect.signature(command, eval_str=True)
        kept = [p for p in own.parameters.values() if p.name != "flags"]

        @functools.wraps(command)
        def with_flags(**given: Any) -> Any:
            flags = AgentFlags(**{name: given.pop(name) for name in names if name in given})
            return command(**given, flags=flags)

        signature = own.replace(parameters=[*kept, *flag_params])
        with_flags.__signature__ = signature  # type: ignore[attr-defined]
        with_flags.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        return with_flags

    return decorate


def text_or_file(value: str | None, flag: str) -> str | None:
    """`@path` reads the file; anything else is the text itself."""
    if value is None or not value.startswith("@"):
        return value
    return read_text_file(value[1:], flag)


def read_text_file(path: str | Path, flag: str) -> str:
    """A file's text for `flag`: a usage error naming the file when it cannot be read, or is
    not UTF-8 (an editor's byte order mark is left out)."""
    try:
        data = Path(path).expanduser().read_bytes()
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint=flag) from exc
    return utf8_text(data, str(path), flag)


def utf8_text(data: bytes, source: str, flag: str) -> str:
    """`data` as text; not UTF-8 (a Latin-1 file, a pipe from a legacy tool) is a usage error
    saying where, not a traceback or a run failing later on the text."""
    try:
        return decode_utf8(data, source)
    except NotUtf8 as exc:
        raise typer.BadParameter(f"{exc}: {CONVERT_TO_UTF8}", param_hint=flag) from None


class NotUtf8(ValueError):
    """Input that is not UTF-8 text; the message says where and at which byte."""


CONVERT_TO_UTF8 = "convert it, e.g. iconv -f latin1 -t utf-8"


def decode_utf8(data: bytes, source: str) -> str:
    """`data` as text (an editor's byte order mark left out), else `NotUtf8` naming `source`."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotUtf8(f"{source} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                      f"{exc.start})") from None


def _session_flag(resume: str | None, continue_last: bool, workdir: Path | None,
                  db: str | None) -> str | None:
    if resume and continue_last:
        raise typer.BadParameter("give --resume ID or --continue, not both", param_hint="--resume")
    if not (resume or continue_last):
        return None
    from loopwright.cli.store import find_session

    return find_session(resume, workdir=workdir, db=db)  # a unique prefix, or the latest here


def _cli_store(db: str | None) -> bool | str | None:
    """The CLI saves sessions by default (the library only when given `store=`); `--db` names
    the database."""
    from loopwright.cli.store import cli_store_default, store_path

    return cli_store_default() if db is None else str(store_path(db))


def _tool_options(tools: str | None, read_only: bool) -> dict[str, Any]:
    """The built-in tools (`--tools` narrows them, `--read-only` keeps those that change nothing)
    and, on a terminal, the approval (y/n/always) and clarify prompts."""
    from loopwright.builtin import default_tools
    from loopwright.cli.approval import terminal_prompts
    from loopwright.errors import ConfigError

    names = tools.split(",") if tools else None
    try:
        chosen = default_tools(read_only=read_only, names=names)
    except ConfigError as exc:
        raise typer.BadParameter(str(exc), param_hint="--tools") from exc
    return {"tools": chosen, **terminal_prompts()}
