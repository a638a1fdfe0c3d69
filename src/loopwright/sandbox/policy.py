"""What a sandbox allows: the mode, the network switch and the writable roots, from settings.

Modes (the `sandbox_mode` setting, `--sandbox` on the command line):

- `read-only`: the whole filesystem is read-only; only a private, empty /tmp is writable.
- `workspace-write` (default): as read-only, plus the working directory and the extra
  `allowed_roots` are writable.
- `full-access`: no sandbox at all; commands run with the user's full rights.

The network is a separate switch (`sandbox_network`, off by default) and is all or nothing: a
per-host allow-list would need a filtering proxy inside the sandbox, which loopwright does not
ship, and an allow-list that is not enforced would be worse than none (docs/safety.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from loopwright.errors import ConfigError

SandboxMode = Literal["read-only", "workspace-write", "full-access"]
MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "full-access")
DEFAULT_MODE: SandboxMode = "workspace-write"

SANDBOX_SERVICE = "sandbox"
"""`ToolContext.services` key holding the run's `SandboxPolicy` (absent: the default policy)."""

# Credential stores in the home directory, hidden from sandboxed commands (an empty directory or
# file is mounted over each one that exists), so a command cannot read keys it has no use for.
HIDDEN_HOME_DIRS = (".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".config/gcloud",
                    ".config/gh", ".config/loopwright", ".password-store")
HIDDEN_HOME_FILES = (".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass")
# Inside a writable root these stay read-only: a command that could write them would run code
# outside the sandbox later (git hooks, `core.fsmonitor` / `core.pager` in .git/config, the same
# in a submodule's, a `.git` file pointing at a planted git directory) or loosen loopwright's own
# settings.
PROTECTED_SUBPATHS = (".git/hooks", ".git/config", ".git/modules", "loopwright.toml")
PINNED_SUBPATHS = (".git",)
"""Kept where they are (writable, but they cannot be renamed or deleted): otherwise `mv .git x`
and a fresh `.git` with hooks would get around the protected paths inside. A `.git` that is a
file (a worktree's pointer) is read-only instead."""


@dataclass(frozen=True, kw_only=True)
class SandboxPolicy:
    """The sandbox of one agent (the workspace roots come from the run)."""

    mode: SandboxMode = DEFAULT_MODE
    network: bool = False
    env_passthrough: tuple[str, ...] = ()  # secret-looking variables the user lets through
    bwrap: str = "bwrap"  # the bubblewrap binary: a name on PATH or a path
    hidden_home: tuple[str, ...] = field(default=HIDDEN_HOME_DIRS + HIDDEN_HOME_FILES)

    @property
    def enabled(self) -> bool:
        """False only in full-access mode (no sandbox wanted)."""
        return self.mode != "full-access"

    @property
    def writes_workspace(self) -> bool:
        return self.mode == "workspace-write"

    def writable(self, roots: Sequence[Path]) -> list[Path]:
        """Which of the workspace roots (working directory and `allowed_roots`) commands may
        write: all of them in workspace-write mode, none otherwise."""
        return [root.resolve() for root in roots] if self.writes_workspace else []


def context_policy(services: Mapping[str, Any]) -> SandboxPolicy:
    """The run's policy from `ToolContext.services`, else the default (sandboxed, no network)."""
    policy = services.get(SANDBOX_SERVICE)
    return policy if isinstance(policy, SandboxPolicy) else SandboxPolicy()


def parse_mode(value: Any, source: str = "sandbox_mode") -> SandboxMode:
    """`value` as a mode; `ConfigError` naming the valid ones otherwise."""
    if isinstance(value, str) and value.strip().lower() in MODES:
        return cast(SandboxMode, value.strip().lower())
    raise ConfigError(f"{source} = {value!r} is not a sandbox mode; use one of "
                      f"{', '.join(MODES)}")


def policy_from_settings(settings: Any) -> SandboxPolicy:
    """The policy for an agent's `Settings` (checked: a bad value raises `ConfigError`)."""
    network = settings.sandbox_network
    if not isinstance(network, bool):
        raise ConfigError(f"sandbox_network = {network!r} must be true or false")
    return SandboxPolicy(
        mode=parse_mode(settings.sandbox_mode),
        network=network,
        env_passthrough=tuple(_strings(settings.env_passthrough, "env_passthrough")),
        bwrap=str(settings.sandbox_bwrap or "bwrap"),
    )


def _strings(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{name} must be a list of strings, got {value!r}")
    return list(value)
