"""The bubblewrap command line for one sandboxed command on Linux.

The filesystem view is built in this order (later mounts cover earlier ones):

1. the whole filesystem read-only (`--ro-bind / /`), a fresh /dev and /proc;
2. a private, empty /tmp (tmpfs of `sandbox_tmp_mb`; gone when the command ends);
3. the workspace roots bound again (read-write in workspace-write mode), so that a workspace
   under /tmp stays visible, and a program started by its path under /tmp bound read-only;
4. inside writable roots, the protected paths (the whole `.git`, `loopwright.toml`,
   `.loopwright/`, MCP configs, skill folders, the configured git hooks directory: the one list
   in `loopwright.safety.protected`) bound read-only again, and a placeholder bound read-only
   where one does not exist yet (`mounts.py`, `placeholders.py`); so are the scripts the
   user's hooks run (`SandboxPolicy.held_files`), their directories made un-renameable;
5. credential stores in the home directory, the user's loopwright config directory, the data
   directory and the host services' Unix sockets (the user's runtime directory, Docker's, …)
   covered by an empty, read-only directory or file.

The command also gets its own PID namespace (it sees only its own processes; when the command
exits, everything it left in the background is killed), its own IPC namespace, no network unless
the policy allows it (`--unshare-net` leaves only a loopback interface of its own), and
`--die-with-parent` so it cannot outlive loopwright. It starts under the supervisor
(`supervisor.py`), which sets the process, file-size and address-space limits and stops a command
that reaches the process limit; where this process may make one, bubblewrap also runs in a pids
cgroup of its own (`cgroup.py`), a hard cap that holds for root too. bubblewrap and its init
stay in the process group the bash tool kills on a timeout or cancel; when the init dies, the
kernel kills every process of the namespace, including any that moved to a session of their own.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loopwright.safety.git_hooks import missing_included_configs
from loopwright.safety.protected import repository_locations
from loopwright.safety.sandbox import supervisor
from loopwright.safety.sandbox.cgroup import PidsGroup, pids_group
from loopwright.safety.sandbox.links import GuardedLink
from loopwright.safety.sandbox.mounts import hidden_mounts, read_only_mounts
from loopwright.safety.sandbox.planted import Tree, take
from loopwright.safety.sandbox.policy import MEBIBYTE, SandboxPolicy

PYCACHE_PREFIX = "/tmp/.pycache"  # where no folder of the workspace's own can be made


def python_caches(policy: SandboxPolicy, workspace: Path) -> str:
    """Where Python inside keeps its compiled caches (`PYTHONPYCACHEPREFIX`): a folder of the
    workspace's own in loopwright's cache, kept from one command to the next (in the private
    /tmp every command compiled again every module it imported, the standard library's too,
    since Python then reads caches from the prefix alone). Not beside the sources: a `.pyc` a
    command writes there runs at the user's next import outside the sandbox, which never
    reads the prefix (`planted.py` removes those). Blocking (makes the folder)."""
    key = hashlib.blake2b(os.fsencode(workspace), digest_size=8).hexdigest()
    folder = Path(policy.pycache_root) / key
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:  # a cache that cannot be written: the private /tmp, as before
        return PYCACHE_PREFIX
    return str(folder)


@dataclass(frozen=True, kw_only=True)
class BwrapCommand:
    """The argv, and what must exist while it runs (placeholders, a pids cgroup)."""

    argv: list[str]
    placeholders: list[Path] = field(default_factory=list)
    pids_group: PidsGroup | None = None  # to make before and remove after the command
    links: list[GuardedLink] = field(default_factory=list)  # to put back if replaced
    trees: list[Tree] = field(default_factory=list)  # the writable roots before the command
    # included git config files missing before the command: moved aside if it made them
    missing_configs: list[tuple[Path, Path]] = field(default_factory=list)  # (root, path)


def bwrap_command(policy: SandboxPolicy, bwrap: str, command: Sequence[str], *, cwd: Path,
                  roots: Sequence[Path], home: Path | None = None) -> BwrapCommand:
    """`bwrap … -- command` for `policy`; `bwrap` is the resolved binary, `roots` the
    workspace roots (working directory first). Reads the filesystem: call it off the loop."""
    writable = policy.writable(roots)
    whole_root_writable = Path("/") in writable
    argv = [bwrap, "--bind" if whole_root_writable else "--ro-bind", "/", "/",
            "--dev", "/dev", "--proc", "/proc", *_tmp_size(policy), "--tmpfs", "/tmp"]
    resolved = [Path(r).resolve() for r in roots]
    for root in resolved:  # under /tmp they would be hidden
        if root != Path("/"):
            argv += ["--bind-try" if root in writable else "--ro-bind-try", str(root), str(root)]
    wrapped = _supervised(policy, command, writable)
    for program in dict.fromkeys((wrapped[0], command[0]) if command else ()):
        argv += _program_mount(program)
    if wrapped[:1] == [_interpreter()]:
        argv += _standard_library_mount()
    # taken before the command starts: what it plants below the top is undone afterwards
    marks = Path(policy.pycache_root).with_name("planted-walks")
    trees = [take(root, marks=marks) for root in writable if root != Path("/")]
    nested = [path for tree in trees for path in (*tree.nested, *tree.pointed, *tree.held)]
    # a repository below the top (vendored, or a bare one) has its includes and hooks too
    below = [(tree.root, path.parent) for tree in trees for path in tree.nested
             if path.name.casefold() == ".git"]
    below += [(tree.root, path) for tree in trees for path in tree.held]
    nested += [path for _, top in below for path in repository_locations(top)]
    # not bound (a placeholder there would make git stop reading its config): checked after
    tops = [(tree.root, tree.root) for tree in trees] + below
    missing = [(root, path) for root, top in tops
               for path in missing_included_configs(top) if path.is_relative_to(root)]
    protected = read_only_mounts(writable, policy.held_files, policy.skill_folders, nested)
    argv += protected.argv
    argv += hidden_mounts(policy, home or Path.home(), resolved)
    caches = python_caches(policy, resolved[0] if resolved else cwd)
    if caches != PYCACHE_PREFIX:  # after the hidden mounts, which may cover loopwright's cache
        argv += ["--bind", caches, caches]
    # No `--new-session`: bubblewrap's own init must stay in the process group loopwright kills
    # on a cancel or timeout (the command has no terminal anyway: bubblewrap is started in a
    # new session of its own, with stdin from /dev/null and a fresh /dev).
    argv += ["--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    if not policy.network:
        argv.append("--unshare-net")
    argv += ["--setenv", "PYTHONPYCACHEPREFIX", caches]
    argv += ["--chdir", str(cwd), "--", *wrapped]
    group = pids_group(policy.limits.processes)
    return BwrapCommand(argv=group.wrap(argv) if group else argv,
                        placeholders=protected.placeholders, pids_group=group,
                        links=protected.links, trees=trees, missing_configs=missing)


def bwrap_argv(policy: SandboxPolicy, bwrap: str, command: Sequence[str], *, cwd: Path,
               roots: Sequence[Path], home: Path | None = None) -> list[str]:
    """The argv of `bwrap_command` (placeholders left out: for inspection)."""
    return bwrap_command(policy, bwrap, command, cwd=cwd, roots=roots, home=home).argv


def probe_argv(bwrap: str, policy: SandboxPolicy) -> list[str]:
    """A command that succeeds exactly when bubblewrap can build this kind of sandbox here."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            *_tmp_size(policy), "--tmpfs", "/tmp",
            "--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    if not policy.network:
        argv.append("--unshare-net")
    return [*argv, "--", "/bin/sh", "-c", "exit 0"]


def _tmp_size(policy: SandboxPolicy) -> list[str]:
    megabytes = policy.limits.tmp_mb
    return ["--size", str(megabytes * MEBIBYTE)] if megabytes > 0 else []


def _supervised(policy: SandboxPolicy, command: Sequence[str], writable: Sequence[Path]
                ) -> list[str]:
    """`command` started by the supervisor when any limit applies (it watches the free space
    of the writable roots' disks too)."""
    limits = policy.limits.for_supervisor()
    if not any(limits.values()) or not command:
        return list(command)
    values = [str(limits[name]) for name in supervisor.LIMIT_NAMES]
    return [_interpreter(), "-I", "-S", "-c", _supervisor_source(), *values,
            *(str(root) for root in writable), "--", *command]


@functools.cache
def _interpreter() -> str:
    # the real binary: a virtual environment's link may live under /tmp, and -I -S needs only
    # the standard library, which sits beside the real binary
    return os.path.realpath(sys.executable)


@functools.cache
def _supervisor_source() -> str:
    return Path(supervisor.__file__).read_text(encoding="utf-8")


def _standard_library_mount() -> list[str]:
    """The supervisor's interpreter installed under /tmp (a Python built there) needs its
    standard library back too, read-only."""
    prefix = Path(sys.base_prefix).resolve()
    return ["--ro-bind", str(prefix), str(prefix)] if prefix.is_relative_to("/tmp") else []


def _program_mount(program_name: str) -> list[str]:
    """A program that lives under /tmp (ripgrep in a virtual environment there, started by name
    or by path) would be hidden by the private /tmp: bind that one file back, read-only."""
    found = shutil.which(program_name) if program_name else None  # a bare name: PATH finds it
    if found is None:
        return []
    program = Path(found).resolve()
    if not program.is_relative_to("/tmp") or not program.is_file():
        return []
    return ["--ro-bind", str(program), str(program)]
