"""What a workspace's Python environment runs at every start — a `.pth` file's import lines, a
`sitecustomize.py`, the interpreter and library `pyvenv.cfg` names — runs outside the sandbox
as soon as VS Code's Python extension starts that environment when you open the folder. A
`pip install` writes `.pth` files too (editable installs, setuptools), so one a command wrote is
not undone: the command's result names it, and says nothing when it wrote none.

Real bubblewrap and a real venv, through `Agent` against the fake model server."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from sandbox_helpers import PYTHON, command_result

pytestmark = pytest.mark.usefixtures("needs_bwrap")


def environment(workdir: Path) -> Path:
    """A workspace holding a venv (no pip: nothing installed), and its site-packages."""
    workdir.mkdir()
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(workdir / ".venv")], check=True,
                   timeout=60)
    [site] = (workdir / ".venv" / "lib").glob("python3*/site-packages")
    return site


@pytest.mark.parametrize("name", ["zz-evil.pth", "sitecustomize.py"])
async def test_what_a_command_writes_for_an_environments_start_is_named(
        tmp_path: Path, name: str) -> None:
    workdir = tmp_path / "work"
    site = environment(workdir)
    canary = tmp_path / "PTH-RAN"
    line = f"import pathlib; pathlib.Path({str(canary)!r}).touch()"
    relative = (site / name).relative_to(workdir)
    text = await command_result(workdir, f"printf '%s\\n' {line!r} > {relative} && echo end")
    assert "end" in text and f"wrote {relative}" in text and "warning" in text, text
    # the danger named is real: the environment started outside runs it
    subprocess.run([str(workdir / ".venv" / "bin" / "python"), "-c", "pass"], check=True,
                   timeout=60)
    assert canary.exists()


async def test_a_changed_pyvenv_cfg_is_named(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    environment(workdir)
    text = await command_result(workdir, "echo 'include-system-site-packages = true' >> "
                                ".venv/pyvenv.cfg && echo end")
    assert "end" in text and "wrote .venv/pyvenv.cfg" in text, text


async def test_nothing_is_named_when_the_command_wrote_no_such_file(tmp_path: Path) -> None:
    # must not fire: a module written into the environment, the `.pth` files and pyvenv.cfg
    # only read, and the project's own files of those names outside any site-packages
    workdir = tmp_path / "work"
    site = environment(workdir)
    (site / "kept.pth").write_text("/nowhere\n")
    relative = site.relative_to(workdir)
    text = await command_result(workdir, f"mkdir {relative}/pkg && echo x=1 > "
                                f"{relative}/pkg/__init__.py && cat {relative}/kept.pth "
                                ".venv/pyvenv.cfg > /dev/null && echo x > data.pth && "
                                "echo y=1 > sitecustomize.py && echo end")
    assert text.startswith("end") and "warning" not in text, text
