"""`loopwright models`: which providers and context windows loopwright finds, and how.

It lists the configured chain (the primary model, then each fallback) with the window each one
would run with and where that number came from (`explicit`, `probe:/api/ps`, `metadata`,
`default`), then the local servers that answer on their usual ports (`--scan`, the default), then
the embedded model `--local` runs, once its weights are cached.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from loopwright.endpoints.probe import WindowInfo


def models_command(
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help="Model, alias or provider:model (default: as `run` would pick).")]
    = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="API base URL, with or without /v1.")] = None,
    api_key: Annotated[str | None, typer.Option("--api-key", help="API key.")] = None,
    api_mode: Annotated[str | None, typer.Option(
        "--api-mode", help="chat_completions, responses or anthropic_messages.")] = None,
    context_window: Annotated[int | None, typer.Option(
        "--context-window", min=1, help="An explicit window, as `run` would use it.")] = None,
    json_output: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object per provider instead of a table.")] = False,
    scan: Annotated[bool, typer.Option(
        "--scan/--no-scan", help="Also look for local servers on their usual ports.")] = True,
    old_scan: Annotated[bool | None, typer.Option(
        "--local/--no-local", hidden=True,  # its name until 0.x: `--local` elsewhere is the
        help="Old name of --scan/--no-scan.")] = None,  # embedded model
) -> None:
    """Show each configured provider's context window and where it came from, and the embedded
    model (`--local`) once its weights are cached."""
    if old_scan is not None:
        from loopwright.cli.render import say

        say("`models --local/--no-local` is now `--scan/--no-scan` (the old name goes in the "
            "next release)")
        scan = old_scan
    options = {"model": model, "base_url": base_url, "api_key": api_key, "api_mode": api_mode,
               "context_window": context_window}
    rows, problem = asyncio.run(_gather({k: v for k, v in options.items() if v is not None},
                                        scan=scan))
    if json_output:
        for row in rows:
            typer.echo(json.dumps(row))
    elif rows:
        _print_table(rows)
    if problem:
        typer.echo(problem, err=True)
    if all(row["role"] == "embedded" for row in rows):  # `run` without --local finds none
        raise typer.Exit(6)


async def _gather(options: dict[str, Any], *, scan: bool) -> tuple[list[dict[str, Any]],
                                                                    str | None]:
    from loopwright.endpoints.base import close_shared_client
    from loopwright.errors import LoopwrightError

    rows: list[dict[str, Any]] = []
    problem = None
    try:
        rows.extend(await _configured(options))
    except LoopwrightError as exc:
        problem = f"no configured provider: {exc}"
    if scan:
        rows.extend(await _local_servers(options.get("context_window")))
    rows.extend(_embedded())
    await close_shared_client()
    return rows, problem


def _embedded() -> list[dict[str, Any]]:
    """The embedded model's row when its weights are cached (`--local` then starts it without
    a download); it is not started to be listed."""
    from loopwright.local import CONTEXT_SIZE, DEFAULT_MODEL
    from loopwright.local.weights import model_spec, weights_present

    spec = model_spec(DEFAULT_MODEL)
    if not weights_present(spec):
        return []
    return [{"role": "embedded", "tokens": CONTEXT_SIZE, "source": "embedded (--local)",
             "model": spec.title, "provider": "llamacpp", "base_url": "(started by --local)"}]


async def _configured(options: dict[str, Any]) -> list[dict[str, Any]]:
    from loopwright.agent import Agent

    agent = Agent(**options)
    try:
        windows = await agent.context_windows()
    finally:
        await agent.aclose()
    roles = ["primary", *(f"fallback {n}" for n in range(1, len(windows)))]
    return [_row(role, info) for role, info in zip(roles, windows, strict=True)]


async def _local_servers(explicit: int | None) -> list[dict[str, Any]]:
    from loopwright.endpoints.probe import detect_window
    from loopwright.endpoints.resolve import (
        LOCAL_PROBE_ORDER,
        first_served_model,
        provider,
        resolve_model,
    )

    names = list(LOCAL_PROBE_ORDER)
    served = await asyncio.gather(*(first_served_model(provider(n).base_url, 0.4)
                                    for n in names))
    found = [(n, m) for n, m in zip(names, served, strict=True) if m]
    infos = await asyncio.gather(*(detect_window(resolve_model(f"{n}:{m}"), explicit=explicit)
                                   for n, m in found))
    return [_row(f"local ({n})", info) for (n, _), info in zip(found, infos, strict=True)]


def _row(role: str, info: WindowInfo) -> dict[str, Any]:
    return {"role": role, **info.to_dict()}


def _print_table(rows: list[dict[str, Any]]) -> None:
    """A table where it fits; narrower, one block per provider, so that no URL or model name is
    cut to "…"."""
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    from loopwright.cli.inert import InertConsole as Console  # a server names its models

    console = Console()
    table = Table(title="Providers and context windows")
    for column in ("role", "provider", "model", "base URL", "window", "source"):
        table.add_column(column, justify="right" if column == "window" else "left")
    for row in rows:
        table.add_row(row["role"], row["provider"], row["model"], row["base_url"],
                      f"{row['tokens']:,}", row["source"])
    unbounded = console.options.update_width(10_000)  # the width it would take, not the screen's
    if Measurement.get(console, unbounded, table).maximum <= console.width:
        console.print(table)
        return
    for row in rows:
        console.print(Text.assemble((row["role"], "bold"), f" · {row['provider']}"))
        for label, value in (("model", row["model"]), ("base URL", row["base_url"]),
                             ("window", f"{row['tokens']:,} ({row['source']})")):
            console.print(f"  {label:<9}{value}", markup=False, overflow="fold")
