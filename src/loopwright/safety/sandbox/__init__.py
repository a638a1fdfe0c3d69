"""The OS sandbox every command of a built-in tool runs in (hooks excluded).

One job per module: `policy` (modes, limits, settings), `env` (scrubbing credentials from the
environment), `linux` (the bubblewrap command line), `mounts` (read-only protected paths and
hidden paths), `placeholders` (protected paths that do not exist yet), `links` (symlinks on the
way to a protected path, put back when a command replaced them), `planted` (the `.pyc`
files, repositories and protected names a command left below the top, undone when it ends),
`supervisor` (the first
process inside: limits and their reports), `cgroup` (a pids cgroup per command), `macos` (the
`sandbox-exec` profile, untested), `launch` (probing and building what is started),
`unsandboxed` (what may run without approval where no sandbox can be made) and `prompt` (what
the model is told). See docs/safety.md.
"""

from __future__ import annotations

from loopwright.safety.sandbox.env import is_secret_variable, scrubbed_environment
from loopwright.safety.sandbox.launch import (
    Availability,
    Launch,
    host_program,
    prepare_helper_launch,
    prepare_launch,
    sandbox_availability,
    sandbox_availability_sync,
)
from loopwright.safety.sandbox.policy import (
    MODES,
    SANDBOX_SERVICE,
    SandboxMode,
    SandboxPolicy,
    call_policy,
    context_policy,
    parse_mode,
    policy_from_settings,
)
from loopwright.safety.sandbox.prompt import sandbox_note
from loopwright.safety.sandbox.unsandboxed import is_plainly_read_only

__all__ = [
    "MODES",
    "SANDBOX_SERVICE",
    "Availability",
    "Launch",
    "SandboxMode",
    "SandboxPolicy",
    "call_policy",
    "context_policy",
    "host_program",
    "is_plainly_read_only",
    "is_secret_variable",
    "parse_mode",
    "policy_from_settings",
    "prepare_helper_launch",
    "prepare_launch",
    "sandbox_availability",
    "sandbox_availability_sync",
    "sandbox_note",
    "scrubbed_environment",
]
