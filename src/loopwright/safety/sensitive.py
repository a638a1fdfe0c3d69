"""Which paths are secrets (reading them needs approval) and which are protected configuration
(writing them needs approval). One list, used by every tool and engine: `read_file`, `edit_file`,
`apply_patch`, `list_dir`, both `grep` engines and the shell policy.

Secrets are matched by file name (`SECRET_NAMES`, globs, case-insensitive) or by a directory on
the path (`SECRET_DIRS`: `.ssh/`, `.aws/`, `.config/gcloud/` …). Names ending in `.example`,
`.sample`, `.template` or `.dist` are templates, not secrets. Protected configuration is the one
list the sandbox reads too (`loopwright.safety.protected`), plus the scripts the configured hooks
run (`PROTECTED_PATHS_SERVICE`) and the git hooks directory the repository configures.
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePath

from loopwright.errors import ToolError
from loopwright.safety.git_hooks import hooks_dirs, included_configs
from loopwright.safety.protected import folders_holding_no_root, protected_reason
from loopwright.tools.base import ToolContext

SECRET_NAMES: tuple[str, ...] = (
    ".env", ".env.*", ".envrc", "*.env",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.ppk",
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.gpg", "*.pgp", "*.asc",
    "*.kdbx", "*.age",
    "credentials", "credentials.*", "*_credentials", "*_credentials.*", ".git-credentials",
    ".netrc", "_netrc", ".pgpass", ".npmrc", ".pypirc", ".yarnrc.yml", ".dockercfg",
    ".htpasswd", "kubeconfig", "service-account*.json", "*service_account*.json",
    "application_default_credentials.json", "terraform.tfstate", "terraform.tfstate.*",
    "*.tfstate", "*.tfstate.backup", "*.tfvars", "secrets.*", "vault.yml",
)
SECRET_DIRS: tuple[tuple[str, ...], ...] = (
    (".ssh",), (".gnupg",), (".aws",), (".azure",), (".kube",), (".docker",),
    (".config", "gcloud"), (".password-store",), (".terraform.d",),
)
_TEMPLATE_SUFFIXES = (".example", ".sample", ".template", ".dist", ".tmpl")
PROTECTED_PATHS_SERVICE = "protected_paths"
"""`ToolContext.services` key: extra files (hook scripts) that file tools may not write freely."""
SERVER_SCRIPTS_STATE = "mcp_server_scripts"
"""`ToolContext.state` key: the files the run's stdio MCP servers were started with (published by
the MCP plugin when the run starts), protected as hook scripts are."""


def secret_reason(path: str | PurePath) -> str | None:
    """Why `path` looks like a secrets file (or lies in a secrets directory), else None."""
    pure = PurePath(path)
    name = pure.name.lower()
    if not name.endswith(_TEMPLATE_SUFFIXES):
        for pattern in SECRET_NAMES:
            if fnmatch.fnmatchcase(name, pattern):
                return f"its name matches {pattern}"
    parts = [part.lower() for part in pure.parts[:-1]]
    for directory in SECRET_DIRS:
        width = len(directory)
        if any(tuple(parts[i:i + width]) == directory for i in range(len(parts) - width + 1)):
            return f"it is inside {'/'.join(directory)}/"
    return None


def is_secret_path(path: str | PurePath) -> bool:
    """True for files that usually hold credentials (dotenv files, keys, credential stores)."""
    return secret_reason(path) is not None


def ripgrep_exclusions() -> list[str]:
    """`--glob` arguments that keep ripgrep out of secrets. Patterns that could also match a
    template name (`.env.*`) are left to the output filter, which uses `is_secret_path`."""
    globs = [f"!{pattern}" for pattern in SECRET_NAMES if not pattern.endswith("*")]
    globs += [f"!**/{'/'.join(directory)}/**" for directory in SECRET_DIRS]
    return globs


def protected_paths_of(ctx: ToolContext, target: Path | None = None) -> list[str]:
    """Protected beyond the one list: the scripts configured hooks and MCP servers run, the git
    hooks directories and included config files the configuration names of the workspace's
    repository and of the one `target` is in (a vendored `vendor/x`), and the skill folders
    the settings name (`skill_paths`). Reads files: call it off the loop."""
    # here, not at the top: the sandbox package imports the file tools, which import this one
    from loopwright.safety.sandbox.policy import context_policy

    workdir = Path(ctx.workdir).resolve()
    skills = folders_holding_no_root(context_policy(ctx.services).skill_folders, [workdir])
    repositories = dict.fromkeys((workdir, *((target.parent,) if target else ())))
    git = [path for top in repositories for path in (*hooks_dirs(top), *included_configs(top))]
    return [*held_files(ctx), *(str(path) for path in (*git, *skills))]


def held_files(ctx: ToolContext) -> list[str]:
    """The files something outside the sandbox runs: the scripts of the user's hooks and of
    the run's stdio MCP servers."""
    return [*(ctx.services.get(PROTECTED_PATHS_SERVICE) or ()),
            *(ctx.state.get(SERVER_SCRIPTS_STATE) or ())]


async def require_secret_approval(ctx: ToolContext, path: Path, verb: str = "read") -> None:
    """Ask the approval gate before a tool reads a secrets file; `ToolError` if not approved."""
    if not is_secret_path(path):
        return
    shown = _shown(ctx, path)
    if await ctx.approve("read_secret", f"{verb} {shown} (looks like a secrets file)"):
        return
    raise ToolError(
        f"{shown} looks like a secrets file; {verb}ing it needs the user's approval, which was "
        "not given. Do not try to read it another way; ask the user if you need a value from it.")


async def require_write_approval(ctx: ToolContext, path: Path, verb: str = "write", *,
                                 preview: Callable[[], Awaitable[str]] | None = None) -> None:
    """Ask the approval gate before a tool writes protected configuration; `preview` gives the
    diff the change would make, shown with the question."""
    reason = protected_reason(path, await asyncio.to_thread(protected_paths_of, ctx, path))
    if reason is None:
        return
    shown = _shown(ctx, path)
    diff = await preview() if preview is not None else ""
    detail = f"{verb} {shown} ({reason})" + (f"\n{diff.rstrip()}" if diff else "")
    if await ctx.approve("write_protected", detail):
        return
    raise ToolError(
        f"{shown} is protected ({reason}); {verb.rstrip('e')}ing it needs the user's approval, "
        "which was not given. Tell the user what change you want there instead.")


def _shown(ctx: ToolContext, path: Path) -> str:
    try:
        return str(path.relative_to(Path(ctx.workdir).resolve())) or "."
    except ValueError:
        return str(path)
