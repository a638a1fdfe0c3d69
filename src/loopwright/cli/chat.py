"""`loopwright chat`: a read-eval-print loop holding one conversation across turns.

Each turn is one `agent.run()` given the previous turn's messages as `history`, so the model sees
the whole conversation. All turns run on one event loop, so HTTP connections are reused.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import uuid
from typing import Any

from loopwright.agent import Agent
from loopwright.cli.interrupt import interruptible_run
from loopwright.cli.options import AgentFlags
from loopwright.cli.render import TerminalRenderer, describe_stop
from loopwright.cli.sandbox import agent_sandbox_notice
from loopwright.cli.setup import banner, check_provider, make_agent
from loopwright.endpoints.base import close_shared_client
from loopwright.errors import ConfigError, LoopwrightError
from loopwright.messages import Message

PROMPT = "› "
EXIT_CONFIG = 6
HELP = "/new starts over · /exit or Ctrl-D quits · Ctrl-C cancels a reply"


class ChatRepl:
    """The interactive loop; `loop()` returns the process exit code."""

    def __init__(self, options: dict[str, Any], *, show_reasoning: bool = False) -> None:
        self._options = options
        self._renderer = TerminalRenderer(show_reasoning=show_reasoning)
        self._interactive = sys.stdin.isatty() and sys.stdout.isatty()
        self._history: list[Message] | None = None
        # Every turn of one conversation shares a session id, so a store keeps them together;
        # `--resume ID` supplies it, `/new` makes a fresh one.
        self._agent = self._new_agent(options.get("session_id"))

    def loop(self) -> int:
        """Read prompts until /exit or end of input."""
        if self._interactive:
            with contextlib.suppress(ImportError):
                import readline  # noqa: F401  (line editing and history for input())
        with asyncio.Runner() as runner:
            try:
                primary = runner.run(check_provider(self._agent))
            except LoopwrightError as exc:  # before the first prompt, not after it
                runner.run(close_shared_client())
                print(f"loopwright: {exc}", file=sys.stderr, flush=True)
                return EXIT_CONFIG if isinstance(exc, ConfigError) else 1
            self._renderer.note(f"loopwright chat · {banner(self._agent, primary)} · /help")
            notice = runner.run(agent_sandbox_notice(self._agent))
            if notice:
                self._renderer.note(notice, style="yellow")
            try:
                return self._read_eval_print(runner)
            finally:
                runner.run(self._agent.aclose())  # lets memory learning finish, closes MCP
                runner.run(close_shared_client())

    def _read_eval_print(self, runner: asyncio.Runner) -> int:
        while True:
            line = self._read()
            if line is None:
                return 0
            text = line.strip()
            if not text:
                continue
            if text in ("/exit", "/quit"):
                return 0
            if text == "/new":
                runner.run(self._agent.aclose())
                self._agent = self._new_agent(None)
                self._history = None
                self._renderer.note("new conversation")
                continue
            if text == "/help":
                self._renderer.note(HELP)
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
        line = describe_stop(result)
        if line:
            self._renderer.note(line, style="dim" if result.stop_reason == "cancelled" else "red")

    def _read(self) -> str | None:
        """The next line typed, or None at end of input. Ctrl-C at the prompt clears the line."""
        while True:
            try:
                return input(PROMPT if self._interactive else "")
            except EOFError:
                if self._interactive:
                    print(file=sys.stderr)
                return None
            except KeyboardInterrupt:
                print(file=sys.stderr)
                self._renderer.note("(/exit or Ctrl-D quits)")

    def _new_agent(self, session_id: str | None) -> Agent:
        options = {**self._options, "session_id": session_id or uuid.uuid4().hex}
        agent = make_agent(options, [self._renderer])
        if agent.state_services.store is None:
            self._options["store"] = False  # warned once: /new does not warn again
        return agent


def run_chat(flags: AgentFlags) -> int:
    """`loopwright chat` (and `sessions resume`): the exit code of the whole conversation."""
    options = flags.agent_options()
    try:
        repl = ChatRepl(options, show_reasoning=flags.show_reasoning)
    except LoopwrightError as exc:
        print(f"loopwright: {exc}", file=sys.stderr, flush=True)
        return EXIT_CONFIG if isinstance(exc, ConfigError) else 1
    return repl.loop()
