"""`loopwright acp`: serve an editor over the Agent Client Protocol on stdin/stdout.

The editor starts this command (docs/editors.md has Zed's settings); stdout carries the
protocol alone, notes go to stderr. The flags are `run`'s, less those an editor decides (the
directory comes with each session, approvals go to the editor, sessions are resumed with
`session/load`) and those of a terminal's display (`--output-lines`, `--verbose`).
"""

import asyncio
import os
import stat

import typer

from loopwright.cli.options import AgentFlags, with_agent_flags

# what a terminal shows (no terminal here), and what the editor decides per session
EXCLUDED = ("resume", "continue_last", "workdir", "show_reasoning", "yes", "output_lines",
            "verbose")


@with_agent_flags(exclude=EXCLUDED)
def acp_command(*, flags: AgentFlags) -> None:
    """Serve an editor (Zed, JetBrains, Neovim) over the Agent Client Protocol on stdio."""
    try:
        from loopwright.acp.host import serve_stdio
    except ImportError as exc:
        typer.echo(f"loopwright: acp needs the agent-client-protocol package: pip install "
                   f"'loopwright[acp]' ({exc})", err=True)
        raise typer.Exit(6) from None
    for fd, name in ((0, "stdin"), (1, "stdout")):
        if stat.S_ISREG(os.fstat(fd).st_mode):  # asyncio streams only pipes and terminals
            typer.echo(f"loopwright: acp speaks over pipes; {name} is a file (an editor starts "
                       "this command with pipes: see docs/editors.md)", err=True)
            raise typer.Exit(2)
    from loopwright.cli.local import local_provider
    from loopwright.cli.setup import note_when_started_by_hand
    from loopwright.config import check_model_prefix
    from loopwright.errors import ConfigError

    note_when_started_by_hand("Agent Client Protocol", "an editor (Zed, JetBrains, Neovim)")
    try:
        # the rest is checked per session
        check_model_prefix(flags.model, flags.base_url, named="--model")
        with local_provider(flags.local, flags.agent_options()) as options:
            asyncio.run(serve_stdio(options))
    except ConfigError as exc:  # --local: llama.cpp missing, the weights not to be had
        typer.echo(f"loopwright: {exc}", err=True)
        raise typer.Exit(6) from None
