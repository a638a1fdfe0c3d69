"""`loopwright mcp-server`: this agent as MCP tools (`start_task`, `continue_session`) for
another agent or MCP client, over stdio (default) or streamable HTTP (`--http`)."""

import asyncio
from typing import Annotated

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
    from loopwright.cli.setup import check_model_prefix, note_when_started_by_hand
    from loopwright.errors import ConfigError
    from loopwright.mcp.server import serve

    if not http:
        note_when_started_by_hand("MCP", "an MCP client (another agent, Claude Code, Cursor…)")
    try:
        check_model_prefix(flags.model, flags.base_url)
        with local_provider(flags.local, flags.agent_options()) as options:
            asyncio.run(serve(options, http=http, host=host, port=port, token=token))
    except ConfigError as exc:
        typer.echo(f"loopwright: {exc}", err=True)
        raise typer.Exit(6) from None
