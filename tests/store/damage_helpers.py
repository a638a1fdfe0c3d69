"""Reading a damaged session every way a user does, for the damaged-store tests: each read
either works or ends in a `SessionError` (the CLI: exit 1 with its message); anything else is
returned as what went wrong."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from typer.testing import CliRunner

from loopwright import Agent, tool
from loopwright.errors import SessionError
from loopwright.testing import FakeModelServer, Reply, call

SID = "fuzzed-session"


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def cli_at(db: str, *args: str) -> str | None:
    """What went wrong running `loopwright sessions ARGS` (None: it worked, or failed as it
    should: exit 1 with a message, no traceback)."""
    from loopwright.cli.main import app

    env: dict[str, str | None] = {key: None for key in os.environ
                                  if key.startswith(("LOOPWRIGHT_", "XDG_"))}
    result = CliRunner().invoke(app, ["sessions", *args, "--db", db], env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"sessions {args[0]}: {type(result.exception).__name__}: {result.exception}"[:300]
    if result.exit_code not in (0, 1) or "Traceback" in result.output:
        return f"sessions {args[0]}: exit {result.exit_code}: {result.output[-300:]}"
    return None


async def resume(db: Path | str, server: FakeModelServer, *, refused: bool = False
                 ) -> str | None:
    """What went wrong resuming session SID of `db`; `refused`: the session must not be
    resumed (a `SessionError` naming it, and no request reaching the model)."""
    workdir = str(db.parent) if isinstance(db, Path) else None
    asked = len(server.model_requests)
    try:
        await Agent("test-model", base_url=server.base_url, api_key="k", store=db,
                    session_id=SID, tools=[add], workdir=workdir).run("")
    except SessionError as exc:
        return None if SID in str(exc) else f"resume: a SessionError not naming it: {exc}"
    except Exception as exc:  # what the tests look for
        return f"resume: {type(exc).__name__}: {exc}"[:300]
    if refused:
        sent = server.model_requests[asked:]
        return f"resume: resumed, sending the model {len(sent)} request(s)"
    return None


def one_run_of_add(folder: Path) -> Path:
    """`folder`/s.db holding session `SID` after one run that called `add` and answered."""
    db = folder / "s.db"

    async def run() -> None:
        script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3})]), Reply("5")]
        with FakeModelServer(script) as server:
            await Agent("test-model", base_url=server.base_url, api_key="k", store=db,
                        session_id=SID, tools=[add], workdir=str(folder)).run("add 2 and 3")

    asyncio.run(run())
    return db
