"""Turning a command into what is actually started: sandboxed argv and scrubbed environment.

Whether a sandbox can be made here is probed once per process and binary (bubblewrap may be
missing, or present but unable to create namespaces inside a container) and the answer is cached.
The probe has an async form for tools (it must not block the event loop) and a sync one for the
CLI's start-up notice.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from loopwright.errors import ToolError
from loopwright.safety.sandbox.cgroup import PidsGroup
from loopwright.safety.sandbox.env import scrubbed_environment
from loopwright.safety.sandbox.links import GuardedLink
from loopwright.safety.sandbox.links import restore as restore_links
from loopwright.safety.sandbox.linux import bwrap_command, probe_argv
from loopwright.safety.sandbox.macos import SANDBOX_EXEC, sandbox_exec_argv, seatbelt_profile
from loopwright.safety.sandbox.placeholders import make as make_placeholder
from loopwright.safety.sandbox.placeholders import remove as remove_placeholder
from loopwright.safety.sandbox.planted import (
    Aside,
    Tree,
    started,
    unchecked,
    undo,
    undo_made,
)
from loopwright.safety.sandbox.policy import SandboxMode, SandboxPolicy

_PROBE_TIMEOUT = 10.0


@dataclass(frozen=True, kw_only=True)
class Availability:
    """Whether commands can be sandboxed here; `problem` says why not (one line)."""

    available: bool
    problem: str = ""
    binary: str = ""


# what `Launch.staged` made: placeholders, the pids cgroup (whether), each tree's `started` token
_Staged = tuple[list[Path], bool, list[int | None]]


@dataclass(frozen=True, kw_only=True)
class Launch:
    """What to start for one command. Start it inside `async with launch.staged():`, which makes
    the placeholders for protected paths that do not exist yet and removes them afterwards."""

    argv: list[str]
    env: dict[str, str]
    sandboxed: bool
    problem: str = ""  # why a wanted sandbox could not be made ("" when sandboxed or unwanted)
    placeholders: tuple[Path, ...] = ()
    pids_group: PidsGroup | None = None
    links: tuple[GuardedLink, ...] = ()  # symlinks on the way to protected paths
    trees: tuple[Tree, ...] = ()  # the writable roots before the command (`planted.py`)
    # the git config files the configuration includes that were missing before the command
    missing_configs: tuple[tuple[Path, Path], ...] = ()  # (root, path)
    # what `staged()` put back once the command ended: one line each, for the tool's result
    restored: list[str] = field(default_factory=list)
    # the roots whose plants could not be checked (once each): for the result and the user
    unchecked: list[str] = field(default_factory=list)
    # repositories the command made, moved aside: the user may keep them (`planted.put_back`)
    repositories: list[Aside] = field(default_factory=list)

    @contextlib.asynccontextmanager
    async def staged(self) -> AsyncIterator[None]:
        """Within this block the placeholders exist (bound read-only by the sandbox) and so does
        the pids cgroup; afterwards what is left in the group is killed and both are removed.
        A cancel while they are being made still removes whatever was made."""
        staging = asyncio.ensure_future(asyncio.to_thread(self._stage))
        try:
            made = await asyncio.shield(staging)
        except asyncio.CancelledError:
            await asyncio.to_thread(self._unstage, await staging)  # the thread ran to its end
            raise
        try:
            yield
        finally:
            await asyncio.to_thread(self._unstage, made)

    def _stage(self) -> _Staged:
        made = [path for path in self.placeholders if make_placeholder(path)]
        if self.pids_group is not None:
            try:
                self.pids_group.create()
            except OSError:
                self._unstage((made, False, []))
                raise
        # last: from now on the command may run (a first walk that has not ended: unchecked)
        return made, self.pids_group is not None, [started(tree) for tree in self.trees]

    def _unstage(self, made: _Staged) -> None:
        placeholders, group_made, tokens = made
        if group_made and self.pids_group is not None:
            self.pids_group.remove()  # nothing of the command runs any more: links are checked
        self.restored.extend(restore_links(self.links))
        for placeholder in placeholders:
            remove_placeholder(placeholder)
        for tree, token in zip(self.trees, tokens or [None] * len(self.trees), strict=True):
            undone = undo(tree, token)  # a .pyc, a repository or a protected name it left below
            self.restored.extend(undone.notes)
            self.repositories.extend(undone.repositories)
            warning = unchecked(tree)
            if warning is not None:
                self.unchecked.append(warning)
        self.restored.extend(undo_made(self.missing_configs))


_cache: dict[tuple[str, str, bool], Availability] = {}
_probing: dict[tuple[str, str, bool], asyncio.Future[Availability]] = {}


def _key(policy: SandboxPolicy) -> tuple[str, str, bool]:
    # by the binary PATH finds now: another PATH may have no bubblewrap
    return sys.platform, _bwrap(policy) or policy.bwrap, policy.network


def _unsupported(policy: SandboxPolicy) -> Availability | None:
    """The answer when no probe is needed (or possible), else None."""
    if sys.platform == "darwin":
        if os.access(SANDBOX_EXEC, os.X_OK):
            return Availability(available=True, binary=SANDBOX_EXEC)
        return Availability(available=False, problem=f"{SANDBOX_EXEC} is missing")
    if not sys.platform.startswith("linux"):
        return Availability(available=False,
                            problem=f"no sandbox is implemented for {sys.platform}")
    if _bwrap(policy) is None:
        return Availability(available=False, problem=(
            f"bubblewrap ({policy.bwrap!r}) was not found; install it with "
            "`apt-get install bubblewrap` (or your distribution's bubblewrap package)"))
    return None


def _from_probe(binary: str, returncode: int | None, stderr: bytes) -> Availability:
    if returncode == 0:
        return Availability(available=True, binary=binary)
    detail = stderr.decode("utf-8", "replace").strip().splitlines()
    why = detail[-1] if detail else f"exit status {returncode}"
    return Availability(available=False, binary=binary,
                        problem=f"bubblewrap ({binary}) cannot create a sandbox here: {why}")


async def sandbox_availability(policy: SandboxPolicy) -> Availability:
    """Whether `policy`'s sandbox can be made (probed once, without blocking the loop).

    A cancel of the caller does not cancel the probe, which runs to its end (at most
    `_PROBE_TIMEOUT`) and is shared by every caller meanwhile: asyncio cannot abandon a process
    it is still starting (it would wait for ever for a process nobody reaps), and an abandoned
    probe would leave bubblewrap behind."""
    key = _key(policy)
    cached = _cache.get(key)
    if cached is not None:
        return cached
    answer = _unsupported(policy)
    if answer is not None:
        _cache[key] = answer
        return answer
    probing = _probing.get(key)
    if probing is None or probing.get_loop() is not asyncio.get_running_loop():
        probing = asyncio.ensure_future(_probe(policy, key))
        _probing[key] = probing
    return await asyncio.shield(probing)


async def _probe(policy: SandboxPolicy, key: tuple[str, str, bool]) -> Availability:
    binary = _bwrap(policy) or policy.bwrap
    process: asyncio.subprocess.Process | None = None
    try:
        process = await asyncio.create_subprocess_exec(
            *probe_argv(binary, policy), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, stderr = await asyncio.wait_for(process.communicate(), _PROBE_TIMEOUT)
        answer = _from_probe(binary, process.returncode, stderr)
    except (OSError, TimeoutError) as exc:
        answer = _from_probe(binary, None, str(exc).encode())
    finally:  # a probe that hung must not leave bubblewrap behind
        _probing.pop(key, None)
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
    _cache[key] = answer
    return answer


def sandbox_availability_sync(policy: SandboxPolicy) -> Availability:
    """`sandbox_availability` for code outside an event loop (the CLI at start)."""
    cached = _cache.get(_key(policy))
    if cached is not None:
        return cached
    answer = _unsupported(policy)
    if answer is None:
        binary = _bwrap(policy) or policy.bwrap
        try:
            done = subprocess.run(probe_argv(binary, policy), stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  timeout=_PROBE_TIMEOUT, check=False)
            answer = _from_probe(binary, done.returncode, done.stderr)
        except (OSError, subprocess.TimeoutExpired) as exc:
            answer = _from_probe(binary, None, str(exc).encode())
    _cache[_key(policy)] = answer
    return answer


def _bwrap(policy: SandboxPolicy, roots: Sequence[Path] = ()) -> str | None:
    """The bubblewrap binary to start, never one from the workspace (`host_program`)."""
    return host_program(policy.bwrap, (*policy.workspace, *map(str, roots)))


@functools.lru_cache(maxsize=64)
def _found_on(path: str, name: str, roots: tuple[str, ...]) -> str | None:
    writable = [Path(root).resolve() for root in roots]
    for entry in path.split(os.pathsep):
        if not os.path.isabs(entry):
            continue
        directory = Path(entry).resolve()
        if any(directory == root or directory.is_relative_to(root) for root in writable):
            continue
        candidate = directory / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def host_program(name: str, roots: Sequence[str | Path]) -> str | None:
    """Where the program `name` is on `PATH`, skipping the directories a sandboxed command can
    write — relative entries and any inside the workspace `roots` (an activated project venv's
    `.venv/bin`, `node_modules/.bin`) — so a `bwrap` or `rg` a command planted there is never
    started on the host; `name` itself when it is a path to a program; None when it is found
    nowhere else.
    An answer is kept per `PATH` and roots: a file planted later lies in a skipped directory,
    so it cannot change the answer."""
    if "/" in name:  # a path, as `shutil.which` takes one
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    if not name:
        return None
    return _found_on(os.environ.get("PATH", os.defpath), name,
                     tuple(sorted(str(root) for root in roots)))


async def prepare_launch(policy: SandboxPolicy, command: Sequence[str], *, cwd: Path,
                         roots: Sequence[Path], environ: Mapping[str, str] | None = None
                         ) -> Launch:
    """The argv and environment that run `command` in `cwd` under `policy` (the environment is
    scrubbed in every mode); `roots` are the workspace roots, working directory first."""
    env = scrubbed_environment(os.environ if environ is None else environ,
                               policy.env_passthrough)
    # bubblewrap, and a helper started by name, never from a directory a command can write
    policy = replace(policy, bwrap=_bwrap(policy, roots) or policy.bwrap)
    if command:
        program = host_program(command[0], (*policy.workspace, *roots))
        if program is None:
            raise ToolError(f"{command[0]} was not found on PATH (outside the workspace, where "
                            "commands could have put it)")
        command = [program, *command[1:]]
    if not policy.enabled:
        return Launch(argv=list(command), env=env, sandboxed=False)
    availability = await sandbox_availability(policy)
    if not availability.available:
        return Launch(argv=list(command), env=env, sandboxed=False,
                      problem=availability.problem)
    home = Path(env.get("HOME") or Path.home())
    if sys.platform == "darwin":  # the profile reads the git configuration: off the loop
        profile = await asyncio.to_thread(seatbelt_profile, policy, roots=roots, home=home,
                                          tmpdir=Path(tempfile.gettempdir()))
        return Launch(argv=sandbox_exec_argv(profile, command), env=env, sandboxed=True)
    # reads the filesystem (protected paths, the git configuration): not on the event loop
    built = await asyncio.to_thread(bwrap_command, policy, availability.binary, command,
                                    cwd=cwd, roots=roots, home=home)
    return Launch(argv=built.argv, env=env, sandboxed=True,
                  placeholders=tuple(built.placeholders), pids_group=built.pids_group,
                  links=tuple(built.links), trees=tuple(built.trees),
                  missing_configs=tuple(built.missing_configs))


async def prepare_helper_launch(policy: SandboxPolicy, command: Sequence[str], *, cwd: Path,
                                roots: Sequence[Path]) -> Launch:
    """For a helper program a tool runs on its own terms (ripgrep for `grep`): read-only and
    offline in the sandbox when one can be made, else as it is (it writes nothing by
    construction, so nothing needs approval)."""
    mode: SandboxMode = "read-only" if policy.enabled else "full-access"
    # no process cap: the helper is a known program, and its caller starts it without staging
    limits = replace(policy.limits, processes=0)
    return await prepare_launch(replace(policy, mode=mode, network=False, limits=limits),
                                command, cwd=cwd, roots=roots)
