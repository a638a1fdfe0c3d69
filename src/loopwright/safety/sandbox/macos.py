"""The macOS path: a `sandbox-exec` (Seatbelt) profile generated from the same policy.

UNTESTED: loopwright's CI runs on Linux only. The profile follows the documented SBPL shape (`(deny
default)`, then what is allowed): everything may be read except the hidden paths (credential
stores, loopwright's config and data directories), writes are allowed only under the writable
roots, the private temporary directory and /dev/null-like devices, protected paths stay read-only
(and uncreatable), and network access is allowed only when the policy says so. Seatbelt has no PID
namespace: background processes are killed with the process group instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from loopwright.safety.protected import protected_locations
from loopwright.safety.sandbox.mounts import hidden_paths, spill_paths
from loopwright.safety.sandbox.policy import SandboxPolicy

SANDBOX_EXEC = "/usr/bin/sandbox-exec"


def seatbelt_profile(policy: SandboxPolicy, *, roots: Sequence[Path], home: Path,
                     tmpdir: Path) -> str:
    """The SBPL profile text for `policy` (`roots`: the workspace roots)."""
    writable = [*policy.writable(roots), tmpdir.resolve()]
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec)",
        "(allow process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow mach-lookup)",
        "(allow ipc-posix-shm)",
        "(allow file-read*)",
        '(allow file-write* (literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty")'
        ' (regex #"^/dev/fd/"))',
    ]
    if writable:
        lines.append("(allow file-write* " + " ".join(_subpath(p) for p in writable) + ")")
    # Seatbelt matches paths, existing or not: a protected path that does not exist yet cannot
    # be created either, and no placeholder is needed
    protected = [path for root in policy.writable(roots) for path in protected_locations(root)]
    protected += [Path(path) for path in (*policy.held_files, *policy.skill_folders)]
    if protected:
        lines.append("(deny file-write* " + " ".join(_subpath(p) for p in protected) + ")")
    hidden = hidden_paths(policy, home)
    lines.append("(deny file-read* " + " ".join(_subpath(p) for p in hidden) + ")")
    spills = spill_paths(policy)
    if spills is not None:  # the later rule wins: the session's own spills stay readable
        root, own = spills
        lines.append(f"(deny file-read* {_subpath(root)})")
        if own is not None:
            lines.append(f"(allow file-read* {_subpath(own)})")
    if policy.network:
        lines.append("(allow network*)")
    return "\n".join(lines) + "\n"


def sandbox_exec_argv(profile: str, command: Sequence[str]) -> list[str]:
    """`sandbox-exec -p PROFILE command…`."""
    return [SANDBOX_EXEC, "-p", profile, *command]


def _subpath(path: Path) -> str:
    return f"(subpath {_quoted(path)})"


def _quoted(path: Path) -> str:
    escaped = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
