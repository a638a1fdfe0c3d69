"""A program that lives under /tmp (a virtual environment's ripgrep in a checkout there) still
runs inside the sandbox, whose /tmp is private and empty."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from loopwright.safety.sandbox import SandboxPolicy, prepare_launch


@pytest.mark.usefixtures("needs_bwrap")
@pytest.mark.parametrize("by_name", [False, True])
async def test_a_program_under_tmp_is_visible_read_only_inside_the_sandbox(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_name: bool) -> None:
    assert str(tmp_path).startswith("/tmp/")
    programs = tmp_path / "venv" / "bin"
    programs.mkdir(parents=True)
    program = programs / "say-hello"
    program.write_text("#!/bin/sh\necho hello from $0\n")
    program.chmod(0o755)
    workspace = tmp_path / "work"
    workspace.mkdir()
    if by_name:  # as the grep tool starts ripgrep: by name, found on PATH
        monkeypatch.setenv("PATH", f"{programs}:{os.environ['PATH']}")
    launch = await prepare_launch(SandboxPolicy(), [program.name if by_name else str(program)],
                                  cwd=workspace,
                                  roots=[workspace])
    assert launch.sandboxed
    async with launch.staged():
        proc = await asyncio.create_subprocess_exec(
            *launch.argv, env=launch.env, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert out.decode().strip().endswith("say-hello")

    overwrite = await prepare_launch(SandboxPolicy(), ["/bin/sh", "-c", f"echo x > {program}"],
                                     cwd=workspace, roots=[workspace])
    async with overwrite.staged():
        proc = await asyncio.create_subprocess_exec(*overwrite.argv, env=overwrite.env,
                                                    stderr=asyncio.subprocess.PIPE)
        await proc.communicate()
    assert proc.returncode != 0
    assert program.read_text().startswith("#!/bin/sh")
