"""`loopwright mcp list`: the configured MCP servers and the tools each one offers.

Servers come from the `mcp_servers` setting (`loopwright.toml` or `LOOPWRIGHT_MCP_SERVERS` as
JSON). Each is connected as a run would connect it, listed, and closed again. Exit code 0 when every
server answered, 1 when one failed, 6 for a configuration error.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

EXIT_FAILED = 1
EXIT_CONFIG = 6

mcp_app = typer.Typer(
    help="MCP servers: which are configured and which tools each one offers.",
    no_args_is_help=True,
    add_completion=False,
)


@mcp_app.command("list")
def list_command(
    json_output: Annotated[bool, typer.Option(
        "--json", help="Print one JSON object per server instead of a listing.")] = False,
    server: Annotated[list[str] | None, typer.Option(
        "--server", "-s", help="Only this server (repeatable).")] = None,
) -> None:
    """Connect to each configured MCP server and list its tools."""
    from loopwright.config import load_settings
    from loopwright.errors import ConfigError
    from loopwright.mcp.config import parse_servers
    from loopwright.settings import default_cache_dir

    try:
        settings = load_settings()
        configs = parse_servers(settings.mcp_servers)
    except ConfigError as exc:
        typer.echo(f"configuration error: {exc}", err=True)
        raise typer.Exit(EXIT_CONFIG) from None
    if server:
        unknown = sorted(set(server) - {c.name for c in configs})
        if unknown:
            typer.echo(f"no MCP server named {', '.join(unknown)} is configured", err=True)
            raise typer.Exit(EXIT_CONFIG)
        configs = [c for c in configs if c.name in server]
    if not configs:
        typer.echo("No MCP servers are configured. Add one to loopwright.toml, e.g.\n"
                   '  [mcp_servers.files]\n  command = "npx"\n'
                   '  args = ["-y", "@modelcontextprotocol/server-filesystem", "."]')
        return
    cache = Path(settings.cache_dir).expanduser() if settings.cache_dir else default_cache_dir()
    rows = asyncio.run(_gather(configs, cache / "mcp"))
    from loopwright.cli.inert import escape_controls  # a server names and describes its tools
    from loopwright.events import safe_json

    for row in rows:
        typer.echo(safe_json(json.dumps(row, ensure_ascii=False)) if json_output
                   else escape_controls(_describe(row), keep_newlines=True))
    if any(not row["ok"] for row in rows):
        raise typer.Exit(EXIT_FAILED)


async def _gather(configs: list[Any], log_dir: Path) -> list[dict[str, Any]]:
    from loopwright.mcp.client import MCPManager, tool_guards
    from loopwright.mcp.config import tool_name

    manager = MCPManager(configs, log_dir=log_dir)
    try:
        errors = await manager.start()
        rows = []
        for config in configs:
            if not config.enabled:
                rows.append(_row(config, ok=True, note="disabled"))
                continue
            conn = manager.connections[config.name]
            tools = [{"name": tool_name(config.name, t.name), "remote_name": t.name,
                      # as a run treats it: a server's own claim counts only if it is trusted
                      "read_only": tool_guards(config, t)[0],
                      "description": _first_line(t.description or "")}
                     for t in conn.remote_tools]
            rows.append(_row(config, ok=config.name not in errors, tools=tools,
                             error=errors.get(config.name), left_out=conn.notes))
        return rows
    finally:
        await manager.aclose()


def _row(config: Any, *, ok: bool, tools: list[dict[str, Any]] | None = None,
         error: str | None = None, note: str | None = None,
         left_out: list[str] | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"name": config.name, "transport": config.transport,
                           "target": config.target, "ok": ok, "tools": tools or []}
    if left_out:  # what the run will not offer the model, and why (mcp/vetting.py)
        row["left_out"] = left_out
    if error:
        row["error"] = error
    if note:
        row["note"] = note
    return row


def _describe(row: dict[str, Any]) -> str:
    head = f"{row['name']}  ({row['transport']}: {row['target']})"
    if row.get("note"):
        return f"{head}  {row['note']}"
    if not row["ok"]:
        error = str(row.get("error") or "unknown error").replace("\n", "\n  ")
        return f"{head}  FAILED\n  {error}"
    lines = [f"{head}  {len(row['tools'])} tool(s)"]
    width = max((len(t["name"]) for t in row["tools"]), default=0)
    for item in row["tools"]:
        mode = "read-only " if item["read_only"] else "          "
        lines.append(f"  {item['name']:<{width}}  {mode} {item['description'][:80]}")
    lines.extend(f"  left out: {why}" for why in row.get("left_out", ()))
    return "\n".join(lines)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
