"""The bubblewrap mounts that keep protected paths read-only and hidden paths out of sight.

Protected paths (the one list, `loopwright.safety.protected`) are bound read-only at the top of
each writable root; one that does not exist yet gets a placeholder (`placeholders.py`) bound
read-only instead, so it cannot be created; the directories on the way to one are made mount
points, so it cannot be swapped by moving them. Hidden paths — credential stores in the home
directory, the user's loopwright config directory wherever `XDG_CONFIG_HOME` puts it (serve
token, trusted projects), loopwright's data directory (sessions, attachments, memory), and the
files and directories the settings add (`SandboxPolicy.hidden_paths`) — and the host services'
Unix sockets (`HOST_SERVICE_SOCKETS`, the user's runtime directory) are covered by an empty
read-only directory, or `/dev/null` for a file. So is the spill root, but for the calling
session's own directory, bound back read-only (`spill_paths`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from loopwright.config import user_config_dir
from loopwright.safety.protected import folders_holding_no_root, protected_locations
from loopwright.safety.sandbox.links import GuardedLink, links_on_the_way
from loopwright.safety.sandbox.placeholders import missing_point, shared
from loopwright.safety.sandbox.policy import (
    DATABASE_SOCKETS,
    HOST_SERVICE_SOCKETS,
    RESOLVER_SOCKETS,
    SandboxPolicy,
)
from loopwright.settings import default_data_dir
from loopwright.tools.output import session_spill_directory


@dataclass(kw_only=True)
class ReadOnlyMounts:
    """The bubblewrap arguments, the placeholders to make, and the symlinks to watch."""

    argv: list[str]
    placeholders: list[Path]
    links: list[GuardedLink]


def read_only_mounts(writable: Sequence[Path], held_files: Sequence[str] = (),
                     folders: Sequence[str] = (), nested: Sequence[Path] = ()
                     ) -> ReadOnlyMounts:
    """Read-only binds for every protected path of the writable roots, every held file (the
    scripts hooks run), every folder the settings protect (`skill_paths`) inside a root and
    the protected names that exist below the top of one (`nested`, found by `planted.py`),
    the placeholders that must exist when bubblewrap starts (for the protected paths that do
    not exist yet), and the symlinks on the way to a protected path (a mount cannot be put on
    a link: `links.py` puts a replaced one back).

    A read-only path below the top of a root (`.agents/skills`, a `core.hooksPath` of
    `.husky/_`, `.hooks/check.py`) could otherwise be swapped by moving a directory on its way
    (`mv .husky x && mkdir -p .husky/_`): each such directory is first bound onto itself —
    writable as before, but a mount point, which can be neither renamed nor removed. All of
    these come before the read-only binds, which must stay over them."""
    extra = [*folders_holding_no_root(folders, writable), *nested]
    targets, placeholders, links = _protected_targets(writable, extra)
    for name in held_files:
        path = Path(name).resolve()
        if path.is_file() and _under_any(path, writable):
            targets.append(path)
    pinned: dict[Path, None] = {}
    for target in targets:
        root = next((r for r in writable if _under_any(target, [r])), target)
        pinned.update(dict.fromkeys(d for d in reversed(target.parents)
                                    if d != root and d.is_relative_to(root)))
    argv = [item for directory in pinned for item in ("--bind", str(directory), str(directory))]
    argv += [item for target in targets for item in ("--ro-bind", str(target), str(target))]
    return ReadOnlyMounts(argv=argv, placeholders=placeholders, links=links)


def _protected_targets(writable: Sequence[Path], extra: Sequence[Path]
                       ) -> tuple[list[Path], list[Path], list[GuardedLink]]:
    """What to bind read-only for the protected paths of the writable roots and the `extra`
    ones inside them (where each really is, or its placeholder), the placeholders among them,
    and the symlinks on their way."""
    targets: list[Path] = []
    placeholders: list[Path] = []
    links: dict[Path, GuardedLink] = {}
    covered: list[Path] = []  # protected directories: nothing inside them needs its own mount
    locations = [location for top in writable for location in protected_locations(top)]
    for location in [*locations, *extra]:
        root = next((r for r in writable if _under_any(location, [r])), None)
        if root is None or _under_any(location, covered):
            continue
        link = links_on_the_way(root, location)
        if link is not None:
            links.setdefault(link.path, link)
        placeholder = shared(root, location)
        target = None if placeholder else _existing_inside(location, writable)
        if target is None:
            placeholder = placeholder or missing_point(root, location)
            if placeholder is None or _under_any(placeholder, covered):
                continue
            placeholders.append(placeholder)
            target = placeholder
        targets.append(target)
        if target.is_dir() or target == placeholder:
            covered.append(target)
    return targets, placeholders, list(links.values())


def hidden_paths(policy: SandboxPolicy, home: Path) -> list[Path]:
    """Everything a sandboxed command must not read or connect to: the credential stores in
    `home`, the user's config directory, the data directory, the settings' own paths and the
    host services' sockets."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    cache = os.environ.get("XDG_CACHE_HOME", "")  # git's credential cache lives there then
    return [*(home / relative for relative in policy.hidden_home),
            user_config_dir(), default_data_dir(),
            *(Path(path).expanduser() for path in policy.hidden_paths),
            *(Path(path) for path in HOST_SERVICE_SOCKETS),
            *(Path(path) for path in (
                () if policy.network else (*DATABASE_SOCKETS, *RESOLVER_SOCKETS))),
            *([Path(runtime)] if os.path.isabs(runtime) else []),
            *([Path(cache) / "git" / "credential"] if os.path.isabs(cache) else []),
            *terminal_sessions()]


# Variables naming a socket that drives the user's terminal or editor, outside the sandbox:
# WezTerm's and kitty's remote control (`send-text`), Neovim's server (`:terminal` sets $NVIM),
# VS Code's CLI hook (it opens and runs things in the window)
_DRIVING_SOCKETS = ("WEZTERM_UNIX_SOCKET", "KITTY_LISTEN_ON", "NVIM", "NVIM_LISTEN_ADDRESS",
                    "VSCODE_IPC_HOOK_CLI")


def terminal_sessions() -> list[Path]:
    """The sockets of the user's terminal sessions that the environment names: the tmux server
    loopwright runs under (`$TMUX`: its own socket, not the folder, which may be any) and the
    user's other tmux servers (`$TMUX_TMPDIR/tmux-UID`), `$SCREENDIR`, and the remote controls
    of terminals and editors (`_DRIVING_SOCKETS`). `tmux send-keys`, `screen -X stuff` and
    `wezterm cli send-text` type into the user's shell, outside the sandbox. The default places
    (`/tmp/tmux-UID`, `/run/screen`, the runtime directory) are covered already."""
    found: list[Path] = []
    for name in ("TMUX", *_DRIVING_SOCKETS):
        value = os.environ.get(name, "").split(",")[0].removeprefix("unix:")
        if os.path.isabs(value):
            found.append(Path(value))
    tmux_folder = os.environ.get("TMUX_TMPDIR", "")
    if os.path.isabs(tmux_folder):
        found.append(Path(tmux_folder) / f"tmux-{os.getuid()}")
    screen_folder = os.environ.get("SCREENDIR", "")
    if os.path.isabs(screen_folder):
        found.append(Path(screen_folder))
    return found


def hidden_mounts(policy: SandboxPolicy, home: Path, roots: Sequence[Path]) -> list[str]:
    """Mounts covering every hidden path that exists, except one that holds a workspace root
    (the user made it, or something in it, the workspace: it stays visible)."""
    argv: list[str] = []
    done: set[Path] = set()
    for path in hidden_paths(policy, home):
        if not os.path.lexists(path):
            continue
        path = path.resolve()  # a linked ~/.ssh is hidden where it really is
        if (_under_any(path, list(done)) or not os.path.exists(path)
                or any(_under_any(root, [path]) for root in roots)):
            continue
        done.add(path)
        if path.is_dir():
            argv += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv + _spill_mounts(policy, roots, list(done))


def spill_paths(policy: SandboxPolicy) -> tuple[Path, Path | None] | None:
    """The spill root to hide and, inside it, the calling session's directory to leave
    readable (None when it does not exist yet); None when there is no spill root."""
    if not policy.spill_root or not os.path.isdir(policy.spill_root):
        return None
    root = Path(policy.spill_root).resolve()
    try:
        own = session_spill_directory(root, policy.spill_scope) if policy.spill_scope else None
    except OSError:  # an unusable key: no spill of this session's could have been made
        own = None
    return root, own if own is not None and own.is_dir() else None


def _spill_mounts(policy: SandboxPolicy, roots: Sequence[Path], hidden: Sequence[Path]
                  ) -> list[str]:
    """The spill root covered like a hidden directory, the session's own bound back read-only
    before the cover is made read-only (the bind needs its mount point made in the cover)."""
    paths = spill_paths(policy)
    if paths is None:
        return []
    root, own = paths
    if _under_any(root, hidden) or any(_under_any(r, [root]) for r in roots):
        return []  # hidden whole already, or the user made it (or a part) the workspace
    argv = ["--tmpfs", str(root)]
    if own is not None:
        argv += ["--ro-bind", str(own), str(own)]
    return [*argv, "--remount-ro", str(root)]


def _existing_inside(path: Path, writable: Sequence[Path]) -> Path | None:
    """Where `path` really is, if it exists and that is inside a writable root (a symlink
    pointing elsewhere leads to a path that is read-only already)."""
    if not path.exists():
        return None
    real = path.resolve()
    return real if _under_any(real, writable) else None


def _under_any(path: Path, parents: Sequence[Path]) -> bool:
    return any(path == parent or path.is_relative_to(parent) for parent in parents)
