"""Start a fake model server in its own process for a benchmark, so its CPU time is not the
measured process's: run the command, wait for its `READY <base_url>` line."""

from __future__ import annotations

import subprocess


def start_ready(command: list[str]) -> tuple[subprocess.Popen[str], str]:
    """(the process, its base URL); the process is killed if it does not report ready."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("READY "):
        process.kill()
        raise RuntimeError(f"the fake server did not start: {line!r}")
    return process, line.split(" ", 1)[1]
