"""Servers in their own process for a benchmark, so their CPU time is not the measured
process's: `start_ready` runs the command and waits for its `READY <base_url>` line;
`serve_until_stopped` is the child's side for an ASGI app (loopwright serve's)."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from typing import Any


def start_ready(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    """(the process, its base URL); the process is killed if it does not report ready."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("READY "):
        process.kill()
        raise RuntimeError(f"the fake server did not start: {line!r}")
    return process, line.split(" ", 1)[1]


def serve_until_stopped(app: Any, **config: Any) -> None:
    """Serve `app` with uvicorn on a free loopback port, print `READY <url>`, serve until
    Ctrl-C or SIGTERM (`config`: more uvicorn settings, e.g. `backlog`)."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                           lifespan="on", **config))

    async def main() -> None:
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        print(f"READY http://127.0.0.1:{port}", flush=True)
        await task

    with contextlib.suppress(KeyboardInterrupt):  # uvicorn re-raises the Ctrl-C it handled
        asyncio.run(main())
