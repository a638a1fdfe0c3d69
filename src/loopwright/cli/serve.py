"""`loopwright serve`: the HTTP/SSE server and web page (`loopwright.serve`), with the same
config, sandbox, policy and session store as `loopwright run`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from loopwright.cli.options import AgentFlags, with_agent_flags
from loopwright.serve import DEFAULT_APPROVAL_TIMEOUT

if TYPE_CHECKING:
    import socket

DEFAULT_PORT = 8765
_EXIT_CONFIG = 6  # as `loopwright run`: a configuration error
_EXIT_USAGE = 2  # a flag that cannot be used, as the flag parser's own errors


@with_agent_flags(exclude=("show_reasoning", "resume", "continue_last", "output_lines",
                           "verbose"))
def serve_command(
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on. Anything but loopback needs a token you chose "
        "(--token or LOOPWRIGHT_SERVE_TOKEN).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: any free).")]
    = DEFAULT_PORT,
    token: Annotated[str | None, typer.Option(
        "--token", help="Bearer token to require (default: LOOPWRIGHT_SERVE_TOKEN, else "
        "~/.config/loopwright/serve_token, created on first start).")] = None,
    approval_timeout: Annotated[float, typer.Option(
        "--approval-timeout", min=1.0, help="Seconds an approval waits for an answer before "
        "the call is denied.")] = DEFAULT_APPROVAL_TIMEOUT,
    output_type: Annotated[list[str] | None, typer.Option(
        "--output-type", metavar="NAME=module:Class", help="A typed output clients may ask "
        "for by NAME (\"output_type\": \"NAME\" on POST /runs); repeatable.")] = None,
    batch: Annotated[list[Path] | None, typer.Option(
        "--batch", metavar="DIR", help="A `loopwright batch` output directory to show in the "
        "page's batch view; repeatable.")] = None,
    *,
    flags: AgentFlags,
) -> None:
    """Serve the HTTP API and web page: start, watch, steer and approve runs; browse sessions."""
    from loopwright.errors import ConfigError
    from loopwright.serve.auth import is_loopback, server_token, token_path

    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        _say("loopwright serve needs Starlette and uvicorn: pip install 'loopwright[serve]'")
        raise typer.Exit(_EXIT_CONFIG) from None
    from loopwright.serve.agents import output_types_from_flags

    try:
        output_types = output_types_from_flags(output_type or [])
    except ConfigError as exc:
        _say(str(exc))
        raise typer.Exit(_EXIT_USAGE) from None
    try:
        secret, created = server_token(host, token)
        options = flags.agent_options()
        store = _server_store()
    except ConfigError as exc:
        _say(str(exc))
        raise typer.Exit(_EXIT_CONFIG) from None
    if created:
        _say(f"new server token written to {token_path()}")
    from loopwright.cli.local import local_provider

    try:
        with local_provider(flags.local, options) as options:
            _serve(host, port, secret, options, store, approval_timeout, output_types,
                   show_token=is_loopback(host), batches=batch or [])
    except ConfigError as exc:  # --local: llama.cpp missing, the weights not to be had
        _say(str(exc))
        raise typer.Exit(_EXIT_CONFIG) from None


def _server_store() -> Any:
    """The session store runs write to (the CLI's default: saved unless the settings say no)."""
    from loopwright.config import load_settings
    from loopwright.store import open_store

    settings = load_settings()
    spec = settings.store if settings.store is not None else True
    return open_store(spec, data_dir=settings.data_dir)


def _serve(host: str, port: int, token: str, agent_options: dict[str, Any], store: Any,
           approval_timeout: float, output_types: dict[str, Any], *, show_token: bool,
           batches: Sequence[Path] = ()) -> None:
    import uvicorn

    from loopwright.serve.app import ServeOptions, create_app
    from loopwright.serve.limits import ConnectionLimits

    listening = listen_or_exit(host, port)
    _warn_if_the_model_cannot_work(agent_options)
    app = create_app(ServeOptions(token=token, agent_options=agent_options, store=store,
                                  approval_timeout=approval_timeout,
                                  output_types=output_types, batches=list(batches)))
    config = uvicorn.Config(app, host=host, port=port, log_level="warning",
                            timeout_graceful_shutdown=3, lifespan="on",
                            **ConnectionLimits.fitting().uvicorn_config())
    server = uvicorn.Server(config)

    def started() -> None:
        bound = server.servers[0].sockets[0].getsockname() if server.servers else (host, port)
        shown = f"[{bound[0]}]" if ":" in str(bound[0]) else bound[0]
        link = f"http://{shown}:{bound[1]}/"
        _say(f"serving on {link}" + (page_fragment(token) if show_token else
                                     " (send the token as 'Authorization: Bearer …')"))
        _say(f"API: {link}docs — Ctrl-C stops")

    _run_with_notice(server, started, listening)


def page_fragment(token: str) -> str:
    """The page link's fragment: the token, which a browser never sends to a server (nor in a
    Referer), percent-encoded so "&", "#" or "%" in it reach the page as they are."""
    from urllib.parse import quote

    return "#token=" + quote(token, safe="")


def _warn_if_the_model_cannot_work(agent_options: dict[str, Any]) -> None:
    """`run`'s check before its first request (`preflight`), as a warning: a run may name a
    model of its own, and a model server may start after this one."""
    import asyncio

    from loopwright.agent import Agent
    from loopwright.cli.setup import check_provider
    from loopwright.endpoints.base import close_shared_client
    from loopwright.errors import LoopwrightError

    async def check() -> None:
        agent = Agent(**{**agent_options, "store": False})
        try:
            await check_provider(agent)
        finally:
            await agent.aclose()
            await close_shared_client()

    try:
        asyncio.run(check())
    except LoopwrightError as exc:
        _say(f"warning: {str(exc).rstrip('.')}; a run that names no model of its own will fail "
             "until it is fixed")


def listen_or_exit(host: str, port: int) -> socket.socket:
    """A server's socket, bound here (for `serve` and `mcp-server --http`): uvicorn would log
    the failure and exit from inside its task, which prints a traceback for a port in use. One
    line and exit 1 when it cannot be had."""
    import os
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
        _say(f"cannot listen on {host}:{port}: {reason}; pass --host and --port "
             "with an address of this machine that is free (--port 0: any)")
        raise typer.Exit(1) from None


def _run_with_notice(server: Any, started: Any, listening: socket.socket) -> None:
    """Run uvicorn and call `started()` once it listens (uvicorn has no hook for that)."""
    import asyncio
    import contextlib

    async def main() -> None:
        task = asyncio.ensure_future(server.serve(sockets=[listening]))
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            started()
        await task

    # uvicorn re-raises the Ctrl-C it handled, once it has shut down: a clean stop here
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    if not server.started:
        raise typer.Exit(1)


def _say(text: str) -> None:
    from loopwright.cli.inert import inert

    print(f"loopwright: {inert(text)}", file=sys.stderr, flush=True)
