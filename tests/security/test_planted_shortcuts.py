"""The check for what a command plants below the top reads a folder again only when its inode
or times changed, and `lstat`s a `.pyc` only after the command: attacks on those shortcuts.

Which signal covers which plant: a new entry (a `.git`, a `.pyc`, a `__pycache__` link, a whole
tree renamed in) changes its folder's ctime, which `touch` cannot set back; a `.pyc` rewritten
in place changes no folder, only its own ctime. Real bubblewrap, Python and git, through `Agent`
against the fake model server."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from sandbox_helpers import app, command_result, fsmonitor, host_git, host_python, plant_pyc

from loopwright.safety.sandbox import planted

pytestmark = pytest.mark.usefixtures("needs_bwrap", "needs_git")

KEEP_TIMES = "touch -r {path} /tmp/times"  # the private /tmp: a reference for `touch -r`
PUT_TIMES_BACK = "touch -r /tmp/times {path}"


async def test_a_repository_planted_in_a_known_folder_whose_mtime_is_put_back_is_moved(
        tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    (workdir / "pkg").mkdir(parents=True)
    old = os.stat(workdir / "pkg")
    canary = tmp_path / "FSMONITOR-RAN"
    text = await command_result(
        workdir, f"{KEEP_TIMES.format(path='pkg')} && git init -q pkg && git -C pkg config "
        f"core.fsmonitor '{fsmonitor(canary)}' && {PUT_TIMES_BACK.format(path='pkg')} && "
        "stat -c %Y pkg")
    assert str(int(old.st_mtime)) in text  # the folder's mtime was put back
    host_git(workdir / "pkg", "status")
    assert not canary.exists()
    assert (workdir / "pkg" / ".git.made-by-command").is_dir(), text


@pytest.mark.parametrize("put_back", ["the file's", "the file's and its folder's"])
async def test_a_pyc_rewritten_in_place_with_its_times_put_back_is_removed(
        tmp_path: Path, put_back: str) -> None:
    # no folder changes: only the file's own ctime tells, which `touch` sets to now
    workdir = app(tmp_path / "work")
    assert host_python(workdir, "import app").returncode == 0
    [cached] = (workdir / "__pycache__").glob("app.*.pyc")
    inode = cached.stat().st_ino
    relative = cached.relative_to(workdir)
    restore = [f"touch -r /tmp/pyc {relative}"]
    if put_back != "the file's":
        restore.append("touch -r /tmp/cache __pycache__")
    canary = tmp_path / "PYC-RAN"
    text = await command_result(
        workdir, f"touch -r {relative} /tmp/pyc && touch -r __pycache__ /tmp/cache && "
        f"{plant_pyc(canary)}\n{' && '.join(restore)} && stat -c %i {relative}")
    assert str(inode) in text  # the same file, rewritten
    host_python(workdir, "import app")
    assert not canary.exists()
    assert "removed 1 compiled Python file" in text, text


async def test_a_pyc_the_command_left_alone_stays_in_a_folder_it_changed(tmp_path: Path) -> None:
    # must not fire: the folder was read again (an entry was added), its old `.pyc` untouched
    workdir = app(tmp_path / "work")
    (workdir / "lib.py").write_text("VALUE = 1\n")
    assert host_python(workdir, "import app, lib").returncode == 0
    time.sleep(0.02)  # older than the clock's tick when the command starts
    [cached] = (workdir / "__pycache__").glob("lib.*.pyc")
    before = cached.stat()
    text = await command_result(workdir, "touch __pycache__/notes.txt && echo made")
    assert text == "made\n[exit code 0]", text
    after = cached.stat()
    assert (after.st_ino, after.st_ctime_ns) == (before.st_ino, before.st_ctime_ns)


async def test_a_tree_renamed_in_over_a_known_folder_is_read_again(tmp_path: Path) -> None:
    # `pkg` and `pkg/lib` exist; the command builds a look-alike tree holding a repository and
    # a compiled module, gives its folders the old ones' mtimes, and swaps it in
    workdir = app(tmp_path / "work")
    (workdir / "pkg" / "lib").mkdir(parents=True)
    (workdir / "pkg" / "lib" / "mod.py").write_text("print('the real mod')\n")
    assert host_python(workdir / "pkg" / "lib", "import mod").returncode == 0
    canary = tmp_path / "PLANT-RAN"
    text = await command_result(workdir, f"""cp -a pkg stage && cd stage/lib && \
git init -q && git config core.fsmonitor '{fsmonitor(canary)}' && \
{plant_pyc(canary).replace('app.py', 'mod.py').replace('"app.', '"mod.')}
cd ../.. && touch -r pkg/lib stage/lib && touch -r pkg stage && \
mv pkg old && mv stage pkg && rm -rf old && echo swapped""")
    assert "swapped" in text, text
    host_git(workdir / "pkg" / "lib", "status")
    host_python(workdir / "pkg" / "lib", "import mod")
    assert not canary.exists()
    assert (workdir / "pkg" / "lib" / ".git.made-by-command").is_dir(), text
    assert "removed 1 compiled Python file(s) the command wrote (pkg/lib/__pycache__" in text


def test_a_folder_changed_within_the_clock_tick_of_its_reading_is_read_again(
        tmp_path: Path) -> None:
    """A command running beside another one's snapshot: the folder is read, then in the same
    tick a repository is made in it and the mtime put back. Its times are as read (the ctime
    stays within the tick); judged by the mtime alone the listing was kept, and the repository
    missed. The ctime is what must be older than a tick."""
    root = tmp_path / "work"
    package = root / "pkg"
    package.mkdir(parents=True)
    old = (0, os.stat(package).st_mtime_ns - 10**10)  # an mtime long past
    missed = 0
    for _ in range(5):
        os.utime(package, ns=old)  # the ctime is now
        planted.take(root)  # reads `pkg`
        (package / ".git").mkdir()
        os.utime(package, ns=old)
        missed += package / ".git" not in planted.take(root).nested
        (package / ".git").rmdir()
    assert missed == 0
