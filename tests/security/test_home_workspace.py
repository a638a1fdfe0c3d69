"""A workspace that holds the home directory (`loopwright chat` started in `~`, a container whose
home is the project): the files a shell, SSH, git or an editor runs at the next login or start
(`~/.bashrc`, `~/.config/autostart/…`, `~/.gitconfig`) were as writable as the project, so a
command planted code that ran outside the sandbox later. They are protected there now; the
project's own files are not, and neither is a `.bashrc` in a workspace that is not the home
(a dotfiles repository).

Real bubblewrap, through `Agent` against the fake model server."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_helpers import run_calls_asking as run

pytestmark = pytest.mark.usefixtures("needs_bwrap")

PLANT = ("echo 'touch /var/tmp/pwned' >> .bashrc; mkdir -p .config/autostart && "
         "echo '[Desktop Entry]' > .config/autostart/x.desktop; mv .config .c; "
         "printf '[core]\\n\\tpager = touch /var/tmp/pwned\\n' > .gitconfig; "
         "echo mine > notes.txt && cat notes.txt")




async def test_startup_files_of_a_home_that_is_the_workspace_stay_read_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".config").mkdir(parents=True)
    (home / ".bashrc").write_text("# mine\n")
    monkeypatch.setenv("HOME", str(home))
    [result], _ = await run(home, ("bash", {"command": PLANT}), approve_all=True)  # --yes
    assert result.count("Read-only file system") >= 2 and "Device or resource busy" in result
    assert result.endswith("mine\n[exit code 0]"), result  # must not fire: the project's files
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert sorted(p.name for p in home.iterdir()) == [".bashrc", ".config", "notes.txt"]
    assert list((home / ".config").iterdir()) == []


async def test_file_tools_ask_before_writing_a_startup_file_of_the_home(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    [result], asked = await run(home, ("write_file", {"path": ".bashrc", "content": "x\n"}))
    assert "protected" in result and len(asked) == 1 and "log in" in asked[0]
    assert not (home / ".bashrc").exists()


async def test_a_bashrc_in_a_workspace_that_is_not_the_home_is_the_projects(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, dotfiles = tmp_path / "home", tmp_path / "home" / "dotfiles"
    dotfiles.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    [result, written], asked = await run(
        dotfiles, ("bash", {"command": "echo x >> .bashrc && echo ok"}),
        ("write_file", {"path": ".profile", "content": "x\n"}))
    assert result == "ok\n[exit code 0]" and written.startswith("Created") and asked == []
    assert (dotfiles / ".bashrc").read_text() == "x\n" and (dotfiles / ".profile").exists()
