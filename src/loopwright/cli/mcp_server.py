"""`loopwright mcp-server`: this agent as MCP tools (`start_task`, `continue_session`) for
another agent or MCP client, over stdio (default) or streamable HTTP (`--http`)."""

import asyncio
from collections.abc import Coroutine
from typing import Annotated, Any

import typer

from loopwright.cli.options import AgentFlags, with_agent_flags

# what a terminal shows: the client gets answers, not a screen
EXCLUDED = ("resume", "continue_last", "show_reasoning", "output_lines", "verbose")


@with_agent_flags(exclude=EXCLUDED)
def mcp_server_command(
    http: Annotated[bool, typer.Option(
        "--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port.")] = 8765,
    token: Annotated[str | None, typer.Option(
        "--token", help="HTTP bearer token (default: loopwright serve's token).")] = None,
    *,
    flags: AgentFlags,
) -> None:
    """Serve this agent as MCP tools; calls that need approval are denied unless --yes."""
    from loopwright.cli.local import local_provider
    from loopwright.cli.serve import listen_or_exit
    from loopwright.cli.setup import note_when_started_by_hand
    from loopwright.config import check_model_prefix
    from loopwright.errors import ConfigError
    from loopwright.mcp.server import serve

    if not http:
        note_when_started_by_hand("MCP", "an MCP client (another agent, Claude Code, Cursor…)")
    try:
        check_model_prefix(flags.model, flags.base_url, named="--model")
        listening = listen_or_exit(host, port) if http else None
        with local_provider(flags.local, flags.agent_options()) as options:
            served = serve(options, http=http, host=host, port=port, token=token,
                           listening=listening)
            if http:
                asyncio.run(served)
            else:
                _serve_stdio_until_ctrl_c(served)
    except ConfigError as exc:
        typer.echo(f"loopwright: {exc}", err=True)
        raise typer.Exit(6) from None


def _serve_stdio_until_ctrl_c(served: Coroutine[Any, Any, None]) -> None:
    """Serve on stdio until stdin closes or Ctrl-C. After a Ctrl-C, what is ours is closed
    (`serve`'s own cleanup) but the MCP SDK's stdin reader is still blocked in a thread, which
    neither closing the event loop nor leaving the interpreter would stop waiting for: the
    process ends without them, exit 130 as for any Ctrl-C."""
    import os
    import sys

    runner = asyncio.Runner()
    try:
        runner.run(served)
    except KeyboardInterrupt:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    runner.close()
