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
    8    usage_limit: a `usage_limits` bound (tokens, requests, cost) was reached
    9    output_invalid: the structured output stayed invalid after its retries
    130  cancelled with Ctrl-C (a second Ctrl-C quits at once)

Imports stay cheap here: rich, the agent and the HTTP stack load inside the commands.
"""

import asyncio
import contextlib
import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.core

from loopwright.cli.options import AgentFlags, read_text_file, utf8_text, with_agent_flags

if TYPE_CHECKING:
    from loopwright.agent import Agent
    from loopwright.cli.render import Renderer
    from loopwright.result import RunResult

EXIT_CODES: dict[str, int] = {
    "completed": 0,
    "error": 1,
    "max_turns": 3,
    "budget_exhausted": 4,
    "loop_detected": 5,
    "refused": 7,
    "usage_limit": 8,
    "output_invalid": 9,
    "cancelled": 130,
}
"""Exit code of `loopwright run` per stop reason."""
EXIT_USAGE = 2
EXIT_CONFIG = 6

class _Commands(typer.core.TyperGroup):
    """The root group: every subcommand's help lists an on/off flag without a `<bool>` after
    it (typer shows the type of every option; a flag takes no value to type)."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _plain_flags(command, ctx)
        return command

    def get_params(self, ctx: Any) -> Any:
        _plain_flags(self, ctx, recurse=False)
        return super().get_params(ctx)


def _plain_flags(command: Any, ctx: Any, *, recurse: bool = True) -> None:
    for param in [*command.params, command.get_help_option(ctx)]:
        if getattr(param, "is_flag", False) and not getattr(param, "count", False):
            param.metavar = ""
    for sub in getattr(command, "commands", {}).values() if recurse else ():
        _plain_flags(sub, ctx)


app = typer.Typer(
    name="loopwright",
    cls=_Commands,
    help="A runtime for LLM agent loops: one loop, every provider, every guard.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # locals may hold API keys
    rich_markup_mode="markdown",
)


# --- running -----------------------------------------------------------------------------------


async def _run_and_close(agent: "Agent", prompt: str,
                         renderer: "Renderer") -> "RunResult | None":
    from loopwright.cli.interrupt import interruptible_run
    from loopwright.cli.sandbox import agent_sandbox_notice
    from loopwright.cli.setup import check_provider
    from loopwright.cli.startup import resume_collection
    from loopwright.endpoints.base import close_shared_client

    resume_collection()
    try:
        notice = await agent_sandbox_notice(agent)
        if notice:
            _say(notice)
        await check_provider(agent)  # a bad key, URL or model: exit 6 now, not after retries
        return await interruptible_run(agent, prompt, None, renderer)
    finally:
        await agent.aclose()  # MCP servers it started
        await close_shared_client()


def _say(text: str) -> None:
    from loopwright.cli.render import say

    say(text)


def _recap(session_id: str | None, renderer: "Renderer") -> None:
    """What the resumed session was about, before it goes on."""
    from loopwright.cli.recap import recap

    for line in recap(session_id or ""):
        renderer.note(line)


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
@with_agent_flags()
def run(
    prompt: Annotated[str | None, typer.Argument(
        help="The task. '-' reads it from stdin.", show_default=False)] = None,
    prompt_file: Annotated[Path | None, typer.Option(
        "--prompt-file", exists=True, dir_okay=False, help="Read the task from a file.")] = None,
    json_output: Annotated[bool, typer.Option(
        "--json", help="Print every event as one JSON line on stdout, and nothing else.")] = False,
    *,
    flags: AgentFlags,
) -> None:
    """Run one task to the end, streaming the answer to stdout.

    Exit codes: 0 completed, 1 error, 2 usage error, 3 max_turns, 4 budget_exhausted,
    5 loop_detected, 6 configuration error, 7 refused, 8 usage_limit, 9 output_invalid,
    130 cancelled (Ctrl-C).
    """
    from loopwright.cli.local import local_provider
    from loopwright.cli.render import (
        JsonLinesRenderer,
        TerminalRenderer,
        describe_stop,
        resume_helps,
    )
    from loopwright.cli.setup import make_agent
    from loopwright.errors import LoopwrightError
    from loopwright.events import CancelledEvent

    resuming = bool(flags.resume or flags.continue_last) and prompt is None and prompt_file is None
    text = "" if resuming else _read_prompt(prompt, prompt_file)  # "" continues the task
    options = flags.agent_options()
    renderer: Renderer = (JsonLinesRenderer() if json_output
                          else TerminalRenderer(show_reasoning=flags.show_reasoning,
                                                output_lines=flags.output_lines,
                                                verbose=flags.verbose))
    try:
        with local_provider(flags.local, options) as options:
            agent = make_agent(options, [renderer])
            if flags.resume or flags.continue_last:
                _recap(options.get("session_id"), renderer)
            result = asyncio.run(_run_and_close(agent, text, renderer))
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
        _say(line)
        if (agent.state_services.store is not None and result.session_id
                and resume_helps(result)):
            _say(f"session saved; continue with: loopwright run --resume {result.session_id[:8]}")
    raise typer.Exit(EXIT_CODES[result.stop_reason])


def _read_prompt(prompt: str | None, prompt_file: Path | None) -> str:
    if prompt is not None and prompt_file is not None:
        raise typer.BadParameter("give the prompt as an argument or with --prompt-file, not both",
                                 param_hint="PROMPT")
    if prompt_file is not None:
        text = read_text_file(prompt_file, "--prompt-file")
    elif prompt == "-":
        piped = getattr(sys.stdin, "buffer", None)  # bytes: the locale's decoding hides errors
        text = utf8_text(piped.read(), "stdin", "PROMPT") if piped else sys.stdin.read()
    elif prompt is None:
        raise typer.BadParameter("missing: pass it as an argument, '-' to read stdin, "
                                 "or --prompt-file", param_hint="PROMPT")
    else:  # an argument's bytes that are not UTF-8 come as lone surrogates (surrogateescape)
        text = utf8_text(os.fsencode(prompt), "the prompt", "PROMPT")
    if not text.strip():
        raise typer.BadParameter("the prompt is empty", param_hint="PROMPT")
    return text


@app.command()
@with_agent_flags()
def chat(
    json_output: Annotated[bool, typer.Option(
        "--json", help="Read one message per line of stdin and print every event as one JSON "
        "line on stdout.")] = False,
    *,
    flags: AgentFlags,
) -> None:
    """Talk with an agent; one conversation across turns.

    Ctrl-C cancels the reply in progress (twice quits at once); /new starts a new conversation;
    /exit or Ctrl-D quits.
    """
    from loopwright.cli.chat import run_chat

    raise typer.Exit(run_chat(flags, json_output=json_output))


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
_register("loopwright.cli.batch", "batch_command", name="batch")
_register("loopwright.cli.serve", "serve_command", name="serve")
_register("loopwright.cli.skills", "skills_app", name="skills")
_register("loopwright.cli.memory", "memory_app", name="memory")
_register("loopwright.cli.acp", "acp_command", name="acp")
_register("loopwright.cli.mcp_server", "mcp_server_command", name="mcp-server")


def main() -> None:
    """Console-script entry point (`loopwright`)."""
    from loopwright.endpoints.fixes import for_the_command_line

    for_the_command_line()  # errors name the flags that fix them, not the library's keywords
    for stream in (sys.stdout, sys.stderr):  # never die on a character the terminal lacks
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(errors="replace")  # type: ignore[union-attr]
    app(prog_name="loopwright")


if __name__ == "__main__":
    main()
