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

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from loopwright.errors import ConfigError
from loopwright.safety.protected import setting_skill_folders
from loopwright.settings import DEFAULTS, default_cache_dir, default_data_dir
from loopwright.tools.base import ToolContext
from loopwright.tools.output import spill_directory, spill_scope

SandboxMode = Literal["read-only", "workspace-write", "full-access"]
MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "full-access")
DEFAULT_MODE: SandboxMode = "workspace-write"

SANDBOX_SERVICE = "sandbox"
"""`ToolContext.services` key holding the run's `SandboxPolicy` (absent: the default policy)."""

# Credential stores in the home directory, hidden from sandboxed commands (an empty directory or
# file is mounted over each one that exists), so a command cannot read keys it has no use for.
HIDDEN_HOME_DIRS = (".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".config/gcloud",
                    ".config/gh", ".config/loopwright", ".password-store",
                    # git's credential-cache daemon answers on a socket there with the
                    # passwords and tokens it holds
                    ".cache/git/credential", ".git-credential-cache",
                    # SSH agents of password managers: whoever reaches the socket signs as you
                    ".1password", ".bitwarden-ssh-agent.sock",
                    ".terraform.d", ".oci", ".config/op", ".local/share/keyrings")
HIDDEN_HOME_FILES = (".netrc", ".git-credentials", ".npmrc", ".pypirc", ".pgpass",
                     # tokens of other tools, each in a well-known place
                     ".vault-token", ".cargo/credentials.toml", ".cargo/credentials",
                     ".gem/credentials", ".s3cfg", ".boto", ".config/hub",
                     ".config/rclone/rclone.conf")
# Where the host's services listen on Unix sockets. A socket at a path is reached by its path,
# not through the network namespace, so `--unshare-net` does not stop a command from talking to
# them: the user's systemd and D-Bus session (either runs any command outside the sandbox), the
# ssh and gpg agents, a Docker, Podman, LXD or libvirt daemon (root on the host), snapd. The
# user's runtime directory (`$XDG_RUNTIME_DIR`) is hidden too, wherever it is.
HOST_SERVICE_SOCKETS = ("/run/user", "/run/dbus", "/run/docker.sock", "/run/docker",
                        "/run/containerd", "/run/podman", "/run/libvirt", "/run/snapd.socket",
                        "/run/snapd-snap.socket", "/run/incus", "/var/run/docker.sock",
                        "/var/snap/lxd/common/lxd/unix.socket", "/var/lib/lxd/unix.socket",
                        "/var/lib/incus/unix.socket",
                        # GNU screen's sessions: `screen -X stuff` types into the user's shell
                        "/run/screen", "/var/run/screen")
# Databases on Unix sockets: reached as the user (peer authentication), a superuser role runs
# programs outside the sandbox (`COPY … TO PROGRAM`). Hidden with the network off, when their
# TCP ports are out of reach too; with it on, a socket is no more than the port.
DATABASE_SOCKETS = ("/run/postgresql", "/var/run/postgresql", "/run/mysqld", "/var/run/mysqld",
                    "/run/redis", "/var/run/redis", "/run/mongodb", "/var/run/mongodb")
# The host's name resolvers on Unix sockets: systemd-resolved's varlink socket (glibc's
# nss-resolve speaks it, and so can any program), nscd's and avahi's. Through them a command with
# the network off still had the host look up any name, and a name carries data to the DNS
# servers of its domain (`<secret>.attacker.example`). Hidden with the network off only: with it
# on, the command resolves names itself anyway.
RESOLVER_SOCKETS = ("/run/systemd/resolve", "/run/nscd", "/var/run/nscd", "/run/avahi-daemon",
                    "/var/run/avahi-daemon")
MEBIBYTE = 1024 * 1024


def pycache_directory(cache_dir: str | os.PathLike[str] | None) -> Path:
    """The folder of the sandbox's Python caches for a `cache_dir` setting: beside the spilled
    outputs, in loopwright's cache."""
    return spill_directory(cache_dir).with_name("pycache")


@dataclass(frozen=True, kw_only=True)
class SandboxLimits:
    """What one command may use inside the sandbox; 0 means no limit.

    `processes` counts the command's processes and threads (`RLIMIT_NPROC`, and the supervisor
    stops a command that reaches it), `file_mb` the size of any one file it writes
    (`RLIMIT_FSIZE`), `memory_mb` each process's address space (`RLIMIT_AS`), `tmp_mb` the
    private /tmp (the size of its tmpfs), `min_free_mb` the free space a command must leave on
    each writable root's disk (half of what is free, if that is less when it starts)."""

    processes: int = DEFAULTS.sandbox_max_processes
    file_mb: int = DEFAULTS.sandbox_max_file_mb
    memory_mb: int = DEFAULTS.sandbox_max_memory_mb
    tmp_mb: int = DEFAULTS.sandbox_tmp_mb
    min_free_mb: int = DEFAULTS.sandbox_min_free_mb

    def for_supervisor(self) -> dict[str, int]:
        """The limits the in-sandbox supervisor sets, in its own units (bytes)."""
        return {"processes": self.processes, "file_size": self.file_mb * MEBIBYTE,
                "address_space": self.memory_mb * MEBIBYTE, "tmp_size": self.tmp_mb * MEBIBYTE,
                "min_free": self.min_free_mb * MEBIBYTE}


@dataclass(frozen=True, kw_only=True)
class SandboxPolicy:
    """The sandbox of one agent (the workspace roots come from the run)."""

    mode: SandboxMode = DEFAULT_MODE
    network: bool = False
    env_passthrough: tuple[str, ...] = ()  # secret-looking variables the user lets through
    bwrap: str = "bwrap"  # the bubblewrap binary: a name on PATH or a path
    hidden_home: tuple[str, ...] = field(default=HIDDEN_HOME_DIRS + HIDDEN_HOME_FILES)
    # more files and directories to hide (the settings' data, memory and store paths; the user
    # config and the default data directory are always hidden)
    hidden_paths: tuple[str, ...] = ()
    # files something outside the sandbox runs (the scripts the user's hooks run): read-only,
    # and the directories on their way in a writable root cannot be renamed to swap them
    held_files: tuple[str, ...] = ()
    # the skill folders the settings name (`skill_paths`): inside a writable root they are
    # read-only as a project's own skill folders are (`.agents/skills`), created or not
    skill_folders: tuple[str, ...] = ()
    # the workspace roots the settings name (working directory, allowed_roots): bubblewrap is
    # never looked up on PATH there, where a command could have planted one (a run's own roots
    # are added at each launch)
    workspace: tuple[str, ...] = ()
    # the spilled tool outputs (`tools/output.py`): the root is hidden but for the directory of
    # `spill_scope` (the calling run's session, set per command), so a command reads back its
    # own session's outputs and no other session's or project's (default: the default cache's)
    spill_root: str = field(default_factory=lambda: str(spill_directory(None)))
    spill_scope: str = ""
    # where Python inside keeps its compiled caches, one folder per workspace (`linux.py`):
    # outside the workspace, so no `.pyc` a command writes is imported by Python run outside
    pycache_root: str = field(default_factory=lambda: str(pycache_directory(None)))
    limits: SandboxLimits = field(default_factory=SandboxLimits)

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


def call_policy(ctx: ToolContext) -> SandboxPolicy:
    """The policy a tool call's commands run under: the run's, seeing the call's session's
    spilled outputs (and no other session's)."""
    return replace(context_policy(ctx.services), spill_scope=spill_scope(ctx))


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
        hidden_paths=tuple(str(path) for path in _own_paths(settings)),
        skill_folders=tuple(str(path.resolve()) for path in setting_skill_folders(
            Path(settings.workdir or Path.cwd()), settings.skill_paths or ())),
        spill_root=str(spill_directory(settings.cache_dir)),
        pycache_root=str(pycache_directory(settings.cache_dir)),
        workspace=tuple(str(Path(os.path.expanduser(str(root))).absolute()) for root in (
            settings.workdir or Path.cwd(), *(settings.allowed_roots or ()))),
        limits=SandboxLimits(
            processes=_count(settings.sandbox_max_processes, "sandbox_max_processes"),
            file_mb=_count(settings.sandbox_max_file_mb, "sandbox_max_file_mb"),
            memory_mb=_count(settings.sandbox_max_memory_mb, "sandbox_max_memory_mb"),
            tmp_mb=_count(settings.sandbox_tmp_mb, "sandbox_tmp_mb"),
            min_free_mb=_count(settings.sandbox_min_free_mb, "sandbox_min_free_mb")),
    )


def _own_paths(settings: Any) -> list[Path]:
    """Where loopwright keeps what a command has no business reading: the data directory
    (sessions, attachments, memory), the MCP servers' logs, a memory directory or SQLite store
    set elsewhere, and the config file `LOOPWRIGHT_CONFIG` names (it may hold keys)."""
    from loopwright.builtin.memory import memory_files_for

    workdir = Path(settings.workdir or Path.cwd())
    paths = [Path(settings.data_dir).expanduser() if settings.data_dir else default_data_dir()]
    # the MCP servers' logs (what a server prints may hold its tokens); the spilled outputs
    # beside them have a rule of their own (`spill_root`)
    cache = Path(settings.cache_dir).expanduser() if settings.cache_dir else default_cache_dir()
    paths.append(cache / "mcp")
    if settings.memory_dir:
        paths.append(memory_files_for(memory_dir=settings.memory_dir, data_dir=settings.data_dir,
                                      workdir=workdir).directory)
    store = settings.store
    if isinstance(store, (str, os.PathLike)) and _is_store_path(str(store)):
        database = Path(store).expanduser()
        database = database if database.is_absolute() else workdir / database
        paths += [database.with_name(database.name + suffix)
                  for suffix in ("", "-wal", "-shm", "-journal")]
    explicit = os.environ.get("LOOPWRIGHT_CONFIG")
    if explicit:
        paths.append(Path(explicit).expanduser())
    return paths


def _is_store_path(spec: str) -> bool:
    """Whether a `store` setting names a SQLite file or directory (not a keyword or a URL)."""
    lowered = spec.strip().lower()
    return bool(lowered) and "://" not in lowered and lowered not in (
        "default", "true", "1", "on", "yes", "none", "false", "0", "off", "no")


def _count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{name} = {value!r} must be a whole number, 0 for no limit")
    return value


def _strings(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{name} must be a list of strings, got {value!r}")
    return list(value)
