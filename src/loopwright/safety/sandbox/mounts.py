"""The bubblewrap mounts that keep protected paths read-only and hidden paths out of sight.

Protected paths (the one list, `loopwright.safety.protected`) are bound read-only at the top of
each writable root; one that does not exist yet gets a placeholder (`placeholders.py`) bound
read-only instead, so it cannot be created. Hidden paths — credential stores in the home
directory, the user's loopwright config directory wherever `XDG_CONFIG_HOME` puts it (serve
token, trusted projects), loopwright's data directory (sessions, attachments, memory), and the
files and directories the settings add (`SandboxPolicy.hidden_paths`) — and the host services'
Unix sockets (`HOST_SERVICE_SOCKETS`, the user's runtime directory) are covered by an empty
read-only directory, or `/dev/null` for a file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from loopwright.config import user_config_dir
from loopwright.safety.protected import protected_locations
from loopwright.safety.sandbox.placeholders import missing_point, shared
from loopwright.safety.sandbox.policy import HOST_SERVICE_SOCKETS, SandboxPolicy
from loopwright.settings import default_data_dir


def protected_mounts(writable: Sequence[Path]) -> tuple[list[str], list[Path]]:
    """Read-only binds for every protected path of the writable roots, and the placeholders that
    must exist when bubblewrap starts (for the paths that do not exist yet)."""
    argv: list[str] = []
    placeholders: list[Path] = []
    covered: list[Path] = []  # protected directories: nothing inside them needs its own mount
    for top in writable:
        for location in protected_locations(top):
            root = next((r for r in writable if _under_any(location, [r])), None)
            if root is None or _under_any(location, covered):
                continue
            placeholder = shared(root, location)
            target = None if placeholder else _existing_inside(location, writable)
            if target is None:
                placeholder = placeholder or missing_point(root, location)
                if placeholder is None or _under_any(placeholder, covered):
                    continue
                placeholders.append(placeholder)
                target = placeholder
            argv += ["--ro-bind", str(target), str(target)]
            if target.is_dir() or target == placeholder:
                covered.append(target)
    return argv, placeholders


def held_mounts(files: Sequence[str], writable: Sequence[Path]) -> list[str]:
    """Each existing file of `files` inside a writable root bound read-only, after every
    directory between the root and it is bound onto itself (writable as before, but a mount
    point: it can be neither renamed nor removed, so no other file can take the path). Put
    these before the protected mounts, which must stay read-only over them."""
    argv: list[str] = []
    bound: set[Path] = set()
    for name in files:
        path = Path(name).resolve()
        root = next((r for r in writable if path != r and _under_any(path, [r])), None)
        if root is None or not path.is_file():
            continue
        for directory in reversed(path.parents):
            if directory != root and directory.is_relative_to(root) and directory not in bound:
                bound.add(directory)
                argv += ["--bind", str(directory), str(directory)]
        argv += ["--ro-bind", str(path), str(path)]
    return argv


def hidden_paths(policy: SandboxPolicy, home: Path) -> list[Path]:
    """Everything a sandboxed command must not read or connect to: the credential stores in
    `home`, the user's config directory, the data directory, the settings' own paths and the
    host services' sockets."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    return [*(home / relative for relative in policy.hidden_home),
            user_config_dir(), default_data_dir(),
            *(Path(path).expanduser() for path in policy.hidden_paths),
            *(Path(path) for path in HOST_SERVICE_SOCKETS),
            *([Path(runtime)] if os.path.isabs(runtime) else [])]


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
    return argv


def _existing_inside(path: Path, writable: Sequence[Path]) -> Path | None:
    """Where `path` really is, if it exists and that is inside a writable root (a symlink
    pointing elsewhere leads to a path that is read-only already)."""
    if not path.exists():
        return None
    real = path.resolve()
    return real if _under_any(real, writable) else None


def _under_any(path: Path, parents: Sequence[Path]) -> bool:
    return any(path == parent or path.is_relative_to(parent) for parent in parents)
