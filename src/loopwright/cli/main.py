"""The `loopwright` command line (DESIGN §2 "CLI").

`loopwright run "PROMPT"` runs one task and streams the answer to stdout (tool calls, results and
status go to stderr as one-line notes; `--json` prints every event as a JSON line instead).
`loopwright chat` is an interactive conversation. Other modules add their subcommands in the
registration block at the bottom of this file, one line each.

Exit codes of `run` (`chat` uses 0, 2 and 6):

    0    completed
    1    error: the provider failed after retries and fallbacks, or another loopwright error
    2    usage error (a bad or missing flag)
    3    max_turns: the turn limit was reached
    4    budget_exhausted: the iteration budget ran out
    5    loop_detected: the model kept repeating the same tool call
    6    configuration error: no provider found, a bad loopwright.toml or LOOPWRIGHT_* value
    7    refused: the provider ended the reply as a refusal (content filter); its text is printed
    130  cancelled with Ctrl-C (a second Ctrl-C quits at once)

Imports stay cheap here: rich, the agent and the HTTP stack load inside the commands.
"""

import asyncio
import contextlib
import importlib
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from loopwright.cli.render import Renderer
    from loopwright.result import RunResult

EXIT_CODES: dict[str, int] = {
    "completed": 0,
    "error": 1,
    "max_turns": 3,
    "budget_exhausted": 4,
    "loop_detected": 5,
    "refused": 7,
    "cancelled": 130,
}
"""Exit code of `loopwright run` per stop reason."""
EXIT_USAGE = 2
EXIT_CONFIG = 6

app = typer.Typer(
    name="loopwright",
    help="A runtime for LLM agent loops: one loop, every provider, every guard.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals may hold API keys
    rich_markup_mode="markdown",
)


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


# --- options shared by `run` and `chat` ---------------------------------------------------------

ModelOpt = Annotated[str | None, typer.Option(
    "--model", "-m", help="Model, alias or provider:model, e.g. ollama:qwen2.5 "
    "(default: auto-detected from the environment and local servers).")]
BaseUrlOpt = Annotated[str | None, typer.Option(
    "--base-url", help="API base URL, with or without /v1 (default: LOOPWRIGHT_BASE_URL).")]
ApiKeyOpt = Annotated[str | None, typer.Option(
    "--api-key", help="API key (default: LOOPWRIGHT_API_KEY, or the provider's variable such as "
    "OPENAI_API_KEY).")]
ApiModeOpt = Annotated[ApiMode | None, typer.Option("--api-mode", help="Wire protocol.")]
SystemOpt = Annotated[str | None, typer.Option(
    "--system", help="Extra system instructions, or @FILE to read them from a file.")]
WorkdirOpt = Annotated[Path | None, typer.Option(
    "--workdir", exists=True, file_okay=False, help="Working directory for tools.")]
MaxTurnsOpt = Annotated[int | None, typer.Option("--max-turns", min=1, help="Turn limit.")]
NoStreamOpt = Annotated[bool, typer.Option(
    "--no-stream", help="Ask for whole replies instead of streamed ones.")]
ToolsOpt = Annotated[str | None, typer.Option(
    "--tools", help="Comma-separated built-in tools to offer, e.g. read_file,grep.")]
ReadOnlyOpt = Annotated[bool, typer.Option(
    "--read-only", help="Offer only built-in tools that change nothing.")]
YesOpt = Annotated[bool, typer.Option(
    "--yes", "-y", help="Approve every tool call that would ask for approval.")]
SandboxOpt = Annotated[SandboxChoice | None, typer.Option(
    "--sandbox", help="Command sandbox: read-only, workspace-write (default) or full-access "
    "(no sandbox).")]
ResumeOpt = Annotated[str | None, typer.Option("--resume", help="Continue session ID.")]
ContinueOpt = Annotated[bool, typer.Option(
    "--continue", help="Continue the most recent session.")]
RubricOpt = Annotated[str | None, typer.Option(
    "--rubric", help="Grade the answer against this rubric (or @FILE) and revise it if needed.")]
EffortOpt = Annotated[str | None, typer.Option(
    "--reasoning-effort", help="Reasoning effort for models that have one (low, medium, high).")]
TemperatureOpt = Annotated[float | None, typer.Option(
    "--temperature", help="Sampling temperature.")]
MaxTokensOpt = Annotated[int | None, typer.Option(
    "--max-tokens", min=1, help="Output-token limit per reply.")]
WindowOpt = Annotated[int | None, typer.Option(
    "--context-window", min=1, help="Context window in tokens (default: probed or known).")]
FormatOpt = Annotated[ToolCallFormat | None, typer.Option(
    "--tool-call-format", help="native, or prompt for models without native tool calls.")]
ReasoningOpt = Annotated[bool, typer.Option(
    "--show-reasoning", help="Print the model's reasoning (dimmed, on stderr).")]


@dataclass(kw_only=True)
class AgentFlags:
    """The command-line flags that become `Agent` keyword arguments."""

    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    api_mode: ApiMode | None = None
    system: str | None = None
    workdir: Path | None = None
    max_turns: int | None = None
    no_stream: bool = False
    tools: str | None = None
    read_only: bool = False
    yes: bool = False
    resume: str | None = None
    continue_last: bool = False
    rubric: str | None = None
    reasoning_effort: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    context_window: int | None = None
    tool_call_format: ToolCallFormat | None = None
    sandbox: SandboxChoice | None = None

    def agent_options(self) -> dict[str, Any]:
        """`Agent(**options)`; flags left unset are omitted so env and loopwright.toml apply."""
        options: dict[str, Any] = {
            "model": self.model,
            "base_url": self.base_url,
            "api_key": self.api_key,
            "api_mode": self.api_mode.value if self.api_mode else None,
            "system_prompt": _text_or_file(self.system, "--system"),
            "workdir": str(self.workdir) if self.workdir else None,
            "max_turns": self.max_turns,
            "stream": False if self.no_stream else None,
            "approve_all": True if self.yes else None,
            "sandbox_mode": self.sandbox.value if self.sandbox else None,
            "session_id": _session_flag(self.resume, self.continue_last, self.workdir),
            "store": _cli_store(),
            "rubric": _text_or_file(self.rubric, "--rubric"),
            "reasoning_effort": self.reasoning_effort,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "context_window": self.context_window,
            "tool_call_format": self.tool_call_format.value if self.tool_call_format else None,
            **_tool_options(self.tools, self.read_only),
        }
        return {key: value for key, value in options.items() if value is not None}


def _text_or_file(value: str | None, flag: str) -> str | None:
    """`@path` reads the file; anything else is the text itself."""
    if value is None or not value.startswith("@"):
        return value
    try:
        return Path(value[1:]).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {value[1:]}: {exc.strerror}",
                                 param_hint=flag) from exc


def _session_flag(resume: str | None, continue_last: bool, workdir: Path | None) -> str | None:
    if resume and continue_last:
        raise typer.BadParameter("give --resume ID or --continue, not both", param_hint="--resume")
    if not (resume or continue_last):
        return None
    from loopwright.cli.sessions import find_session

    return find_session(resume, workdir=workdir)  # a unique id prefix, or the latest here


def _cli_store() -> bool | None:
    """The CLI saves sessions by default (the library only when given `store=`)."""
    from loopwright.cli.sessions import cli_store_default

    return cli_store_default()


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


# --- running -----------------------------------------------------------------------------------


async def _run_and_close(options: dict[str, Any], prompt: str,
                         renderer: "Renderer") -> "RunResult | None":
    from loopwright.agent import Agent
    from loopwright.cli.interrupt import interruptible_run
    from loopwright.endpoints.base import close_shared_client

    agent = Agent(callbacks=[renderer], **options)
    from loopwright.cli.sandbox import agent_sandbox_notice

    notice = await agent_sandbox_notice(agent)
    if notice:
        _say(notice)
    try:
        return await interruptible_run(agent, prompt, None, renderer)
    finally:
        await agent.aclose()  # MCP servers it started
        await close_shared_client()


def _say(text: str) -> None:
    print(f"loopwright: {text}", file=sys.stderr, flush=True)


def _setup_failed(exc: Exception, renderer: "Renderer") -> NoReturn:
    """A loopwright error before or around the run: one line, no traceback."""
    from loopwright.errors import ConfigError
    from loopwright.events import ErrorEvent

    config = isinstance(exc, ConfigError)
    renderer(ErrorEvent(message=str(exc), error_type="config" if config else "error"))
    _say(str(exc))
    raise typer.Exit(EXIT_CONFIG if config else EXIT_CODES["error"])


# --- commands -----------------------------------------------------------------------------------


@app.command()
def run(
    prompt: Annotated[str | None, typer.Argument(
        help="The task. '-' reads it from stdin.", show_default=False)] = None,
    prompt_file: Annotated[Path | None, typer.Option(
        "--prompt-file", exists=True, dir_okay=False, help="Read the task from a file.")] = None,
    json_output: Annotated[bool, typer.Option(
        "--json", help="Print every event as one JSON line on stdout, and nothing else.")] = False,
    show_reasoning: ReasoningOpt = False,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    api_mode: ApiModeOpt = None,
    system: SystemOpt = None,
    workdir: WorkdirOpt = None,
    max_turns: MaxTurnsOpt = None,
    no_stream: NoStreamOpt = False,
    tools: ToolsOpt = None,
    read_only: ReadOnlyOpt = False,
    yes: YesOpt = False,
    sandbox: SandboxOpt = None,
    resume: ResumeOpt = None,
    continue_last: ContinueOpt = False,
    rubric: RubricOpt = None,
    reasoning_effort: EffortOpt = None,
    temperature: TemperatureOpt = None,
    max_tokens: MaxTokensOpt = None,
    context_window: WindowOpt = None,
    tool_call_format: FormatOpt = None,
) -> None:
    """Run one task to the end, streaming the answer to stdout.

    Exit codes: 0 completed, 1 error, 2 usage error, 3 max_turns, 4 budget_exhausted,
    5 loop_detected, 6 configuration error, 7 refused, 130 cancelled (Ctrl-C).
    """
    from loopwright.cli.render import JsonLinesRenderer, TerminalRenderer, describe_stop
    from loopwright.errors import LoopwrightError
    from loopwright.events import CancelledEvent

    resuming = bool(resume or continue_last) and prompt is None and prompt_file is None
    text = "" if resuming else _read_prompt(prompt, prompt_file)  # "" continues the task
    options = AgentFlags(
        model=model, base_url=base_url, api_key=api_key, api_mode=api_mode, system=system,
        workdir=workdir, max_turns=max_turns, no_stream=no_stream, tools=tools,
        read_only=read_only, yes=yes, sandbox=sandbox, resume=resume,
        continue_last=continue_last, rubric=rubric,
        reasoning_effort=reasoning_effort, temperature=temperature, max_tokens=max_tokens,
        context_window=context_window, tool_call_format=tool_call_format,
    ).agent_options()
    renderer: Renderer = (JsonLinesRenderer() if json_output
                          else TerminalRenderer(show_reasoning=show_reasoning))
    try:
        result = asyncio.run(_run_and_close(options, text, renderer))
    except LoopwrightError as exc:
        _setup_failed(exc, renderer)
    except KeyboardInterrupt:  # Ctrl-C in the instant before our handler was installed
        result = None
    if result is None:
        renderer(CancelledEvent())
        _say("cancelled")
        raise typer.Exit(EXIT_CODES["cancelled"])
    line = describe_stop(result)
    if line:
        if options.get("store") and result.session_id:
            _say(f"session saved; continue with: loopwright run --resume {result.session_id[:8]}")
        _say(line)
    raise typer.Exit(EXIT_CODES[result.stop_reason])


def _read_prompt(prompt: str | None, prompt_file: Path | None) -> str:
    if prompt is not None and prompt_file is not None:
        raise typer.BadParameter("give the prompt as an argument or with --prompt-file, not both",
                                 param_hint="PROMPT")
    if prompt_file is not None:
        text = prompt_file.read_text(encoding="utf-8")
    elif prompt == "-":
        text = sys.stdin.read()
    elif prompt is None:
        raise typer.BadParameter("missing: pass it as an argument, '-' to read stdin, "
                                 "or --prompt-file", param_hint="PROMPT")
    else:
        text = prompt
    if not text.strip():
        raise typer.BadParameter("the prompt is empty", param_hint="PROMPT")
    return text


@app.command()
def chat(
    show_reasoning: ReasoningOpt = False,
    model: ModelOpt = None,
    base_url: BaseUrlOpt = None,
    api_key: ApiKeyOpt = None,
    api_mode: ApiModeOpt = None,
    system: SystemOpt = None,
    workdir: WorkdirOpt = None,
    max_turns: MaxTurnsOpt = None,
    no_stream: NoStreamOpt = False,
    tools: ToolsOpt = None,
    read_only: ReadOnlyOpt = False,
    yes: YesOpt = False,
    sandbox: SandboxOpt = None,
    resume: ResumeOpt = None,
    continue_last: ContinueOpt = False,
    rubric: RubricOpt = None,
    reasoning_effort: EffortOpt = None,
    temperature: TemperatureOpt = None,
    max_tokens: MaxTokensOpt = None,
    context_window: WindowOpt = None,
    tool_call_format: FormatOpt = None,
) -> None:
    """Talk with an agent; one conversation across turns.

    Ctrl-C cancels the reply in progress (twice quits at once); /new starts a new conversation;
    /exit or Ctrl-D quits.
    """
    from loopwright.cli.chat import ChatRepl
    from loopwright.errors import ConfigError, LoopwrightError

    options = AgentFlags(
        model=model, base_url=base_url, api_key=api_key, api_mode=api_mode, system=system,
        workdir=workdir, max_turns=max_turns, no_stream=no_stream, tools=tools,
        read_only=read_only, yes=yes, sandbox=sandbox, resume=resume,
        continue_last=continue_last, rubric=rubric,
        reasoning_effort=reasoning_effort, temperature=temperature, max_tokens=max_tokens,
        context_window=context_window, tool_call_format=tool_call_format,
    ).agent_options()
    try:
        repl = ChatRepl(options, show_reasoning=show_reasoning)
    except LoopwrightError as exc:
        _say(str(exc))
        code = EXIT_CONFIG if isinstance(exc, ConfigError) else EXIT_CODES["error"]
        raise typer.Exit(code) from None
    raise typer.Exit(repl.loop())


def _version(value: bool) -> None:
    if value:
        from loopwright import __version__

        print(f"loopwright {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """A runtime for LLM agent loops: one loop, every provider, every guard."""
    _warnings_as_notes()


def _warnings_as_notes() -> None:
    """loopwright's own warnings (an untrusted project config, …) print as one `loopwright:`
    line on stderr instead of Python's two-line format."""
    import warnings

    default = warnings.showwarning
    if getattr(default, "loopwright_notes", False):
        return

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if category.__module__.startswith("loopwright"):
            _say(str(message))
        else:
            default(message, category, filename, lineno, file, line)

    show.loopwright_notes = True  # type: ignore[attr-defined]
    warnings.showwarning = show


# --- subcommands from other modules -------------------------------------------------------------


def _register(module_name: str, attribute: str, *, name: str) -> None:
    """Add `module_name.attribute` as subcommand `name`: a `typer.Typer` becomes a group
    (`loopwright sessions list`), a function a command (`loopwright models`).

    A module that does not exist yet is skipped, so a line may name work in progress; a module
    that exists without the attribute is a bug and fails loudly.
    """
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return
        raise
    target = getattr(module, attribute)
    if isinstance(target, typer.Typer):
        app.add_typer(target, name=name)
    else:
        app.command(name)(target)


# REGISTRATION: one line per module; keep heavy imports inside those modules' commands.
_register("loopwright.cli.sessions", "sessions_app", name="sessions")
_register("loopwright.cli.models", "models_command", name="models")
_register("loopwright.cli.mcp", "mcp_app", name="mcp")
_register("loopwright.cli.trust", "trust_command", name="trust")


def main() -> None:
    """Console-script entry point (`loopwright`)."""
    for stream in (sys.stdout, sys.stderr):  # never die on a character the terminal lacks
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="replace")  # type: ignore[union-attr]
    app(prog_name="loopwright")


if __name__ == "__main__":
    main()
