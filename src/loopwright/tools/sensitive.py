"""Which paths are secrets (reading them needs approval) and which are protected configuration
(writing them needs approval). One list, used by every tool and engine: `read_file`, `edit_file`,
`apply_patch`, `list_dir`, both `grep` engines and the shell policy.

Secrets are matched by file name (`SECRET_NAMES`, globs, case-insensitive) or by a directory on
the path (`SECRET_DIRS`: `.ssh/`, `.aws/`, `.config/gcloud/` …). Names ending in `.example`,
`.sample`, `.template` or `.dist` are templates, not secrets. Protected configuration is the
project's `loopwright.toml` (any file of that name), the user's loopwright config directory,
`.git/hooks/` and `.git/config` (both make git run commands), and the scripts the configured
hooks run (`PROTECTED_PATHS_SERVICE`).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path, PurePath

from loopwright.errors import ToolError
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


def user_config_dir() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "loopwright"


def protected_reason(path: Path, extra: Iterable[str | Path] = ()) -> str | None:
    """Why writing `path` (absolute, resolved) could loosen the agent's own safety, else None."""
    if path.name == "loopwright.toml":
        return "it is a loopwright configuration file"
    explicit = os.environ.get("LOOPWRIGHT_CONFIG")
    if explicit and _same(path, Path(explicit)):
        return "it is the loopwright configuration file named by LOOPWRIGHT_CONFIG"
    if _within(path, user_config_dir()):
        return "it is in the user's loopwright configuration directory"
    parts = path.parts
    for index in range(len(parts) - 1):
        if parts[index] == ".git" and (parts[index + 1] == "hooks" or
                                       (parts[index + 1] == "config" and
                                        index + 2 == len(parts))):
            return "git runs commands from it"
    if any(_same(path, Path(other)) for other in extra):
        return "a configured hook runs it"
    return None


def protected_paths_of(ctx: ToolContext) -> list[str]:
    return list(ctx.services.get(PROTECTED_PATHS_SERVICE) or ())


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
    reason = protected_reason(path, protected_paths_of(ctx))
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


def _same(a: Path, b: Path) -> bool:
    try:
        return a == b.expanduser().resolve()
    except OSError:
        return False


def _within(path: Path, root: Path) -> bool:
    try:
        root = root.resolve()
    except OSError:
        return False
    return path == root or path.is_relative_to(root)
