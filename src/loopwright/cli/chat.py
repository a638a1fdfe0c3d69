"""`loopwright chat`: a read-eval-print loop holding one conversation across turns.

Each turn is one `agent.run()` given the previous turn's messages as `history`, so the model sees
the whole conversation. All turns run on one event loop, so HTTP connections are reused. A line
starting with `/word` is a command (`COMMANDS`), never a prompt: an unknown one is an error.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

from loopwright.agent import Agent
from loopwright.cli.interrupt import interruptible_run
from loopwright.cli.options import AgentFlags
from loopwright.cli.prompt import Interrupted, LineInput, TerminalInput, make_input
from loopwright.cli.render import (
    JsonLinesRenderer,
    TerminalRenderer,
    describe_stop,
    say,
    usage_line,
)
from loopwright.cli.sandbox import agent_sandbox_notice
from loopwright.cli.setup import banner, check_provider, make_agent
from loopwright.cli.startup import resume_collection
from loopwright.cli.typeahead import hold_keys
from loopwright.endpoints.base import close_shared_client
from loopwright.errors import ConfigError, LoopwrightError
from loopwright.messages import Message, Usage, assistant, user

EXIT_CONFIG = 6
COMMANDS = {
    "/help": "the commands and keys",
    "/model": "show the model, or switch to another: /model NAME",
    "/tools": "the tools the model may call",
    "/usage": "tokens and cost of this conversation so far",
    "/reasoning": "show or hide the model's reasoning (dimmed) from now on",
    "/expand": "the whole output of the last tool calls",
    "/compact": "summarise the conversation and go on from the summary",
    "/resume": "pick one of the recent sessions here, or continue one: /resume ID",
    "/new": "start a new conversation",
    "/exit": "quit (so do /quit and Ctrl-D)",
}
KEYS = ("Enter sends · Alt-Enter (or Esc, Enter) adds a line · a paste is one message · "
        "Ctrl-C cancels a reply, twice quits · Ctrl-D quits")
COMPACT_PROMPT = ("Summarise our conversation so far for your own later use: the task, what was "
                  "decided and done, files and facts that matter, and what is still open. "
                  "Reply with the summary only.")
_COMMAND = re.compile(r"^(/[A-Za-z][\w-]*)(?:\s+(.*))?$", re.DOTALL)


def parse_command(text: str) -> tuple[str, str] | None:
    """`("/model", "qwen")` for `/model qwen`; None for a prompt (a path like `/etc/x is …` is
    one: a command is `/` and a word)."""
    match = _COMMAND.match(text)
    if match is None:
        return None
    return match.group(1).lower(), (match.group(2) or "").strip()


class ChatRepl:
    """The interactive loop; `loop()` returns the process exit code."""

    def __init__(self, options: dict[str, Any], *, flags: AgentFlags | None = None,
                 db: str | None = None, json_output: bool = False) -> None:
        flags = flags or AgentFlags()
        self._options = options
        self._db = db  # `sessions resume --db`: /resume looks there too
        self._renderer: TerminalRenderer | JsonLinesRenderer = (
            JsonLinesRenderer() if json_output else TerminalRenderer(
                show_reasoning=flags.show_reasoning, reasoning_hint="/reasoning",
                output_lines=flags.output_lines, verbose=flags.verbose, more_hint="/expand"))
        self._history: list[Message] | None = None
        self._usage = Usage()
        self._cost: float | None = None
        # Every turn of one conversation shares a session id, so a store keeps them together;
        # `--resume ID` supplies it, `/new` makes a fresh one.
        self._resumed = bool(options.get("session_id"))  # --resume/--continue named one
        self._agent = self._new_agent(options.get("session_id"))
        self._input: LineInput | TerminalInput = (
            LineInput() if json_output else make_input(COMMANDS, _history_dir(self._agent)))

    def loop(self) -> int:
        """Read prompts until /exit or end of input."""
        resume_collection()
        # keys typed while a run prints are kept for the next prompt (cli/typeahead.py)
        with hold_keys(self._input.interactive), asyncio.Runner() as runner:
            try:
                primary = runner.run(check_provider(self._agent))
            except LoopwrightError as exc:  # before the first prompt, not after it
                runner.run(close_shared_client())
                say(str(exc))
                return EXIT_CONFIG if isinstance(exc, ConfigError) else 1
            self._renderer.note(f"loopwright chat · {banner(self._agent, primary)} · /help")
            if self._input.warning:
                self._renderer.note(self._input.warning, style="yellow")
            notice = runner.run(agent_sandbox_notice(self._agent))
            if notice:
                self._renderer.note(notice, style="yellow")
            if self._resumed:
                self._recap()
            try:
                return self._read_eval_print(runner)
            finally:
                runner.run(self._agent.aclose())  # lets memory learning finish, closes MCP
                runner.run(close_shared_client())

    def _read_eval_print(self, runner: asyncio.Runner) -> int:
        while True:
            try:
                line = runner.run(self._input.read())
            except (Interrupted, KeyboardInterrupt):  # Ctrl-C at the prompt drops the line
                self._renderer.note("(/exit or Ctrl-D quits)")
                continue
            if line is None:
                return 0
            text = line.strip()
            if not text:
                continue
            command = parse_command(text)
            if command is not None:
                if self._command(runner, *command):
                    return 0
                continue
            try:
                self._turn(runner, text)
            except ConfigError as exc:  # nothing will work until the setup is fixed
                self._renderer.note(str(exc), style="red")
                return EXIT_CONFIG
            except LoopwrightError as exc:
                self._renderer.note(str(exc), style="red")

    def _turn(self, runner: asyncio.Runner, prompt: str) -> None:
        result = runner.run(interruptible_run(self._agent, prompt, self._history,
                                              self._renderer))
        if result is None:
            self._renderer.note("cancelled")
            return
        self._history = result.messages
        self._usage.add(result.usage)
        if result.cost is not None:
            self._cost = (self._cost or 0.0) + result.cost
        line = describe_stop(result)
        if line:
            self._renderer.note(line, style="dim" if result.stop_reason == "cancelled" else "red")

    # -- slash commands --

    def _command(self, runner: asyncio.Runner, name: str, argument: str) -> bool:
        """Run one slash command; True when the chat should end."""
        say = self._renderer.note
        if name in ("/exit", "/quit"):
            return True
        if name == "/help":
            for command, meaning in COMMANDS.items():
                say(f"{command:<11} {meaning}", style="default")
            say(KEYS)
        elif name == "/new":
            self._start_over(runner, None)
            say("new conversation")
        elif name == "/model":
            self._model(runner, argument)
        elif name == "/tools":
            say("tools: " + ", ".join(sorted(tool.name for tool in self._agent.registry)))
        elif name == "/usage":
            say(f"this conversation: {usage_line(self._usage.to_dict(), cost=self._cost)} · "
                f"{self._usage.requests} requests")
        elif name == "/reasoning":
            self._renderer.show_reasoning = not self._renderer.show_reasoning
            say("reasoning shown (dimmed)" if self._renderer.show_reasoning
                else "reasoning hidden (one line says how long it was)")
        elif name == "/expand":
            self._renderer.expand()
        elif name == "/compact":
            self._compact(runner)
        elif name == "/resume":
            self._resume(runner, argument)
        else:
            say(f"unknown command {name}: /help lists the commands (nothing was sent to the "
                "model)", style="red")
        return False

    def _model(self, runner: asyncio.Runner, name: str) -> None:
        if not name:
            primary = runner.run(self._agent.providers())[0]
            self._renderer.note(banner(self._agent, primary))
            return
        options = {**self._options, "model": name}
        if ":" in name.split("/", 1)[0]:  # a provider prefix names its own server
            options.pop("base_url", None)
        candidate: Agent | None = None
        try:  # a misspelt provider or a bad setting keeps the model there is
            candidate = make_agent({**options, "session_id": self._agent.settings.session_id},
                                   [self._renderer])
            primary = runner.run(check_provider(candidate))
        except LoopwrightError as exc:
            if candidate is not None:
                runner.run(candidate.aclose())  # the MCP servers it may have started
            current = self._agent.settings.model or "the previous model"
            self._renderer.note(f"{exc} (still using {current})", style="red")
            return
        runner.run(self._agent.aclose())
        self._options, self._agent = options, candidate
        self._renderer.note(f"now: {banner(candidate, primary)}")

    def _compact(self, runner: asyncio.Runner) -> None:
        if not self._history:
            self._renderer.note("nothing to compact yet")
            return
        result = runner.run(interruptible_run(self._agent, COMPACT_PROMPT, self._history,
                                              self._renderer))
        if result is None or result.stop_reason != "completed" or not result.output.strip():
            self._renderer.note("compaction did not finish; the conversation is unchanged")
            return
        before = len(self._history)
        self._start_over(runner, None)
        self._history = [user("Summary of our conversation so far:\n\n" + result.output),
                         assistant("Understood — I will go on from this summary.")]
        self._renderer.note(f"compacted {before} messages into a summary (new session "
                            f"{(self._agent.settings.session_id or '')[:8]})")

    def _resume(self, runner: asyncio.Runner, argument: str) -> None:
        """`/resume ID` continues that session; `/resume` alone lists the recent ones here,
        numbered, and continues the one whose number is typed next."""
        import typer

        from loopwright.cli.recap import picker, recent
        from loopwright.cli.store import find_session

        try:
            if not argument:
                found = recent(db=self._db)
                if not found:
                    self._renderer.note("no saved sessions in this directory")
                    return
                for line in picker(found):
                    self._renderer.note(line, style="default", flat=False)
                self._renderer.note("type a number to resume that session (Enter: stay here)")
                typed = (runner.run(self._input.read()) or "").strip()
                if not (typed.isdigit() and 1 <= int(typed) <= len(found)):
                    self._renderer.note("staying in this conversation")
                    return
                argument = found[int(typed) - 1].id
            self._start_over(runner, find_session(argument, db=self._db))
        except (LoopwrightError, typer.BadParameter) as exc:
            self._renderer.note(str(getattr(exc, "message", exc)), style="red")
            return
        except (Interrupted, KeyboardInterrupt):
            self._renderer.note("staying in this conversation")
            return
        self._recap()

    def _recap(self) -> None:
        from loopwright.cli.recap import recap

        session_id = self._agent.settings.session_id or ""
        for number, line in enumerate(recap(session_id, db=self._db)):
            self._renderer.note(line, style="bold" if number == 0 else "default", flat=False)

    def _start_over(self, runner: asyncio.Runner, session_id: str | None) -> None:
        runner.run(self._agent.aclose())  # lets memory learning finish, closes MCP servers
        self._agent = self._new_agent(session_id)
        self._history = None
        self._usage = Usage()
        self._cost = None

    def _new_agent(self, session_id: str | None) -> Agent:
        options = {**self._options, "session_id": session_id or uuid.uuid4().hex}
        agent = make_agent(options, [self._renderer])
        if agent.state_services.store is None:
            self._options["store"] = False  # warned once: /new does not warn again
        return agent


def _history_dir(agent: Agent) -> Path:
    from loopwright.settings import default_data_dir

    data_dir = agent.settings.data_dir
    return Path(data_dir).expanduser() if data_dir else default_data_dir()


def run_chat(flags: AgentFlags, *, db: str | None = None, json_output: bool = False) -> int:
    """`loopwright chat` (and `sessions resume`, whose `--db` is `db`): the exit code of the
    whole conversation. `json_output`: one message per line of stdin, every event as a JSON
    line on stdout."""
    from loopwright.cli.local import local_provider

    try:
        with local_provider(flags.local, flags.agent_options(db=db)) as options:
            repl = ChatRepl(options, flags=flags, db=db, json_output=json_output)
            return repl.loop()
    except LoopwrightError as exc:
        say(str(exc))
        return EXIT_CONFIG if isinstance(exc, ConfigError) else 1
