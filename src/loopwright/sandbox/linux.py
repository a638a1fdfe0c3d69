"""The bubblewrap command line for one sandboxed command on Linux.

The filesystem view is built in this order (later mounts cover earlier ones):

1. the whole filesystem read-only (`--ro-bind / /`), a fresh /dev and /proc;
2. a private, empty /tmp (tmpfs; gone when the command ends);
3. the workspace roots bound again (read-write in workspace-write mode), so that a workspace
   under /tmp stays visible, and a program started by its path under /tmp bound read-only;
4. inside writable roots, `.git` bound onto itself (pinned: it cannot be renamed or deleted)
   and the protected paths (`.git/hooks`, `.git/config`, `.git/modules`, `loopwright.toml`)
   bound read-only again;
5. credential stores in the home directory covered by an empty, read-only directory or file.

The command also gets its own PID namespace (it sees only its own processes; when the command
exits, everything it left in the background is killed), its own IPC namespace, no network unless
the policy allows it (`--unshare-net` leaves only a loopback interface of its own), and
`--die-with-parent` so it cannot outlive loopwright. bubblewrap and its init stay in the process
group the bash tool kills on a timeout or cancel; when the init dies, the kernel kills every
process of the namespace, including any that moved to a session of their own.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from loopwright.sandbox.policy import PINNED_SUBPATHS, PROTECTED_SUBPATHS, SandboxPolicy


def bwrap_argv(policy: SandboxPolicy, bwrap: str, command: Sequence[str], *, cwd: Path,
               roots: Sequence[Path], home: Path | None = None) -> list[str]:
    """`bwrap … -- command` for `policy`; `bwrap` is the resolved binary, `roots` the
    workspace roots (working directory first)."""
    writable = policy.writable(roots)
    whole_root_writable = Path("/") in writable
    argv = [bwrap, "--bind" if whole_root_writable else "--ro-bind", "/", "/",
            "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for root in (Path(r).resolve() for r in roots):  # under /tmp they would be hidden
        if root != Path("/"):
            argv += ["--bind-try" if root in writable else "--ro-bind-try", str(root), str(root)]
    argv += _program_mount(command)
    for root in writable:
        argv += _protected_mounts(root)
    argv += _hidden_home(policy, home or Path.home(), writable)
    # No `--new-session`: bubblewrap's own init must stay in the process group loopwright kills
    # on a cancel or timeout (the command has no terminal anyway: bubblewrap is started in a
    # new session of its own, with stdin from /dev/null and a fresh /dev).
    argv += ["--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    if not policy.network:
        argv.append("--unshare-net")
    argv += ["--chdir", str(cwd), "--", *command]
    return argv


def probe_argv(bwrap: str, policy: SandboxPolicy) -> list[str]:
    """A command that succeeds exactly when bubblewrap can build this kind of sandbox here."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    if not policy.network:
        argv.append("--unshare-net")
    return [*argv, "--", "/bin/sh", "-c", "exit 0"]


def _program_mount(command: Sequence[str]) -> list[str]:
    """A program that lives under /tmp (ripgrep in a virtual environment there, started by name
    or by path) would be hidden by the private /tmp: bind that one file back, read-only."""
    found = shutil.which(command[0]) if command else None  # a bare name: where PATH finds it
    if found is None:
        return []
    program = Path(found).resolve()
    if not program.is_relative_to("/tmp") or not program.is_file():
        return []
    return ["--ro-bind", str(program), str(program)]


def _protected_mounts(root: Path) -> list[str]:
    """Mounts for the existing pinned and protected paths under `root` whose real location is
    inside it (a symlink pointing elsewhere leads to a path that is read-only already). Any
    mount point is pinned: the kernel refuses to rename or remove it."""
    argv: list[str] = []
    for relative in PINNED_SUBPATHS:
        path = _inside(root, root / relative)
        if path is not None:  # a directory stays writable; a `.git` file does not
            argv += ["--bind" if path.is_dir() else "--ro-bind", str(path), str(path)]
    for relative in PROTECTED_SUBPATHS:
        path = _inside(root, root / relative)
        if path is not None:
            argv += ["--ro-bind", str(path), str(path)]
    return argv


def _inside(root: Path, path: Path) -> Path | None:
    if not path.exists():
        return None
    real = path.resolve()
    return real if real == root or real.is_relative_to(root) else None


def _hidden_home(policy: SandboxPolicy, home: Path, writable: list[Path]) -> list[str]:
    """Mounts covering the home directory's credential stores with empty read-only ones."""
    argv: list[str] = []
    for relative in policy.hidden_home:
        path = home / relative
        if not path.exists():
            continue
        path = path.resolve()  # a linked ~/.ssh is hidden where it really is
        if any(root == path or root.is_relative_to(path) for root in writable):
            continue  # the user made it (or something in it) a workspace: leave it visible
        if path.is_dir():
            argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv
