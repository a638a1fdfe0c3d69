"""What the model is told about the sandbox: a short static system-prompt section.

It depends only on the policy and on whether a sandbox can be made on this machine (probed once
per process), so it is byte-identical across turns and runs and prompt caches keep hitting.
"""

from __future__ import annotations

from loopwright.safety.sandbox.policy import SandboxPolicy

_WHERE = {
    "read-only": "the whole filesystem is read-only (you cannot change any file with bash)",
    "workspace-write": ("only the working directory (and any extra allowed directories) can be "
                        "written; the rest of the filesystem is read-only"),
}


def sandbox_note(policy: SandboxPolicy, *, available: bool, compact: bool = False) -> str:
    """The "# Sandbox" section for `policy`; `compact`: one short line for a small window."""
    if compact:
        return _compact_note(policy, available=available)
    if not policy.enabled:
        return ("# Sandbox\nSandbox: off (full-access). Commands run with the user's full rights; "
                "credentials are removed from their environment. Be careful: nothing stops a "
                "harmful command but you.")
    if not available:
        return ("# Sandbox\nSandbox: unavailable on this machine, so every bash command that "
                "could change something needs the user's approval and may be refused; prefer "
                "the file tools. Credentials are removed from the commands' environment.")
    network = ("Network: on." if policy.network else
               "Network: off (no downloads or package installs; ask the user instead).")
    return (f"# Sandbox\nbash commands run in a sandbox (mode {policy.mode}): "
            f"{_WHERE[policy.mode]}. "
            "/tmp is private and empty for each command; credentials are removed from the "
            "environment and credential stores in the home directory are hidden; background "
            "processes end when the command ends; the .git directory and agent and editor "
            "configuration files are read-only (a missing one shows as an empty directory "
            "while a command runs; leave commits to the user). "
            f"{network} A 'Read-only file system' or "
            "network error is the sandbox at work: do not try to get around it.")


def _compact_note(policy: SandboxPolicy, *, available: bool) -> str:
    if not policy.enabled:
        return "Sandbox: off. Commands run with the user's full rights: be careful."
    if not available:
        return "Sandbox: unavailable; bash commands that change things need approval."
    where = "nothing" if policy.mode == "read-only" else "only the working directory"
    network = "on" if policy.network else "off"
    return (f"Sandbox: bash can write {where}; network {network}. Do not try to get around "
            "the sandbox.")
