"""The one list of protected paths: files that something outside the sandbox runs or obeys later,
so no tool may write them freely and no sandboxed command may write (or create) them at all.

`PROTECTED_ENTRIES` are relative to a workspace root: the git directory (hooks, config, a
submodule's config all make git run commands), loopwright's own project config and folder, MCP
configs, skill folders, another agent's project folder or file (hooks, their scripts, MCP
servers, prompts), what an editor runs when the folder opens (`.vscode`, `.devcontainer`,
`.devcontainer.json`, `.zed`, `.idea`),
pre-commit's config and another version control system's repository where one exists (`.hg`,
`.jj`). To them come the git
hooks directory the configuration names (`core.hooksPath`, `loopwright.safety.git_hooks`) and
the Python environment loopwright runs in (a project's `.venv`, often): a `.pth` file or module
written there runs outside the sandbox at loopwright's next start, or at once when this process
imports a module on first use.

Two readers, one list:

- the file tools (`sensitive.py`) ask for approval before writing a path whose parts contain
  an entry anywhere (`a/b/.git/config` too), the user's loopwright config directory, the file
  `LOOPWRIGHT_CONFIG` names, a hooks directory or a script a configured hook runs;
- the sandbox (`sandbox/linux.py` here) binds each entry at the top of every writable root
  read-only, and makes the ones that do not exist yet uncreatable (`sandbox/placeholders.py`).
"""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePath

from loopwright.config import user_config_dir
from loopwright.safety.git_hooks import (
    common_dir,
    git_dir_of,
    hooks_dirs,
    included_configs,
    submodule_git_paths,
)


@dataclass(frozen=True, slots=True)
class ProtectedEntry:
    """A path relative to a workspace root, and why it matters. `when_present`: protected only
    where it exists already (no placeholder: an empty `.hg` would pass for a repository)."""

    relative: str
    reason: str
    when_present: bool = False


_GIT = "git runs commands from it"  # hooks, core.fsmonitor and core.pager in its config
_OWN_ENVIRONMENT = "it is the Python environment loopwright runs in (its code runs outside " \
    "the sandbox)"
HOME_STARTUP_FILES = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zprofile",
    ".zshenv", ".zlogin", ".zlogout", ".config/fish", ".ssh", ".config/autostart",
    ".config/systemd", ".gitconfig", ".config/git", ".local/bin", ".pam_environment",
    ".xprofile", ".xinitrc", ".xsession",
    # what an editor, a multiplexer or an interpreter runs when it starts
    ".vimrc", ".vim", ".config/nvim", ".emacs", ".emacs.d", ".tmux.conf", ".config/tmux",
    ".ipython", ".pythonrc", ".local/lib", ".config/direnv", ".cargo/config",
    ".cargo/config.toml")
"""Files in the home directory that run, or say what runs, when the user logs in or starts a
program: protected when the home directory lies in a workspace root (`loopwright chat` started
in `~`), and a write to them is a danger for the shell policy wherever the workspace is."""
_STARTUP = "it runs when you log in or start a program (a shell, SSH, git, an editor)"
SKILL_DIRS = (".loopwright/skills", ".claude/skills", ".agents/skills")
"""Where a project keeps its skills (read by `loopwright.skills.discovery`)."""

PROTECTED_ENTRIES: tuple[ProtectedEntry, ...] = (
    ProtectedEntry(".git", _GIT),
    ProtectedEntry("loopwright.toml", "it is a loopwright configuration file"),
    ProtectedEntry(".loopwright", "it is loopwright's project folder (skills, config)"),
    ProtectedEntry(".mcp.json", "it configures MCP servers, which run as commands"),
    # `lfs.url` there sends every file `.gitattributes` gives to LFS to that server at the
    # user's next push: data leaving without any fetch being asked
    ProtectedEntry(".lfsconfig", "git-lfs uploads file contents where it says, at your push"),
    # all of it: the settings' hooks, the scripts they name (`.claude/hooks/*.sh`), skills,
    # commands and agents, each run or obeyed by another agent outside this sandbox
    ProtectedEntry(".claude", "another agent runs hooks and loads prompts from it"),
    # the same for other agents started in the folder: Cursor's hooks (`.cursor/hooks.json`),
    # MCP servers and rules; Gemini CLI's MCP servers and commands (`.gemini/settings.json`)
    ProtectedEntry(".cursor", "another agent runs hooks and MCP servers and loads prompts "
                   "from it"),
    ProtectedEntry(".gemini", "another agent runs MCP servers and loads prompts from it"),
    # more agents that run what their project files say when started in the folder, not
    # each time asked: Codex a trusted project's MCP servers (`.codex/config.toml`), OpenCode
    # MCP servers and plugins (`opencode.json`, `.opencode/plugin`), Continue the MCP servers
    # of `.continue/mcpServers`, Windsurf and Cline hooks (`.windsurf/hooks.json`,
    # `.clinerules/hooks`), Aider its `lint-cmd` after each edit it makes
    ProtectedEntry(".codex", "another agent runs MCP servers and hooks from it"),
    *(ProtectedEntry(path, "another agent runs MCP servers and plugins from it")
      for path in ("opencode.json", "opencode.jsonc", ".opencode")),
    ProtectedEntry(".continue", "another agent runs MCP servers and loads prompts from it"),
    ProtectedEntry(".windsurf", "another agent runs hooks and loads prompts from it"),
    ProtectedEntry(".clinerules", "another agent runs hooks and loads prompts from it"),
    ProtectedEntry(".aider.conf.yml", "another agent runs its lint and test commands after "
                   "its edits"),
    # `.loopwright/skills` and `.claude/skills` lie in folders protected whole already
    *(ProtectedEntry(path, "it is a skill folder, loaded into the prompt")
      for path in SKILL_DIRS if not path.startswith((".loopwright/", ".claude/"))),
    ProtectedEntry(".vscode", "VS Code runs its tasks (runOn: folderOpen) and settings when "
                   "you open the folder"),
    ProtectedEntry(".devcontainer", "VS Code runs its initializeCommand on your machine when "
                   "the container is opened"),
    # the other file Dev Containers reads at a folder's top: the same `initializeCommand`
    ProtectedEntry(".devcontainer.json", "VS Code runs its initializeCommand on your machine "
                   "when the container is opened"),
    # a trusted worktree's language servers and MCP servers (`.zed/settings.json`)
    ProtectedEntry(".zed", "Zed starts the language and MCP servers its settings name when "
                   "you open the folder"),
    # a JetBrains IDE's startup tasks: run configurations started when the project opens
    ProtectedEntry(".idea", "a JetBrains IDE runs its startup tasks when you open the project"),
    ProtectedEntry(".pre-commit-config.yaml", "the pre-commit hook runs what it lists at your "
                   "next git commit"),
    ProtectedEntry(".hg", "Mercurial runs the hooks and extensions its hgrc names",
                   when_present=True),
    ProtectedEntry(".jj", "Jujutsu runs the pager and tools its repository config names",
                   when_present=True),
)

WORKSPACE_FILE_SUFFIX = ".code-workspace"
"""A VS Code workspace file (`team.code-workspace`): VS Code offers to open one it finds at the
top of a folder you open, and then runs its tasks with `runOn: folderOpen`. A name pattern, so
it cannot be bound before it exists: the check after each command (`sandbox/planted.py`) moves
one a command made aside, at any depth, and binds those that exist read-only."""
_WORKSPACE_FILE = "VS Code runs its tasks (runOn: folderOpen) when you open it"


def protected_locations(root: Path) -> list[Path]:
    """Every protected path of the workspace root `root` (absolute, resolved; it may not exist
    yet): the entries at its top, the hooks directories and the existing included config files
    the git configuration names, the git
    directories a `.git` file points to (a worktree's own and the shared one with the hooks
    and config), each submodule's `.git`, the environment loopwright runs in, and the startup
    files of a home directory inside it."""
    found = [root / entry.relative for entry in PROTECTED_ENTRIES
             if not entry.when_present or os.path.lexists(root / entry.relative)]
    git_dir = git_dir_of(root)
    if git_dir is not None and git_dir != root / ".git":
        found += dict.fromkeys((git_dir, common_dir(git_dir)))
    own = [path for path in own_environment() if path.is_relative_to(root)]
    home = Path.home().resolve()
    startup = [home / name for name in HOME_STARTUP_FILES] if home.is_relative_to(root) else []
    return found + repository_locations(root) + own + startup


def repository_locations(top: Path) -> list[Path]:
    """What the configuration of the repository `top` is in makes git run, outside its git
    directory: the hooks directories `core.hooksPath` names, the existing config files it
    includes and each submodule's `.git`. The workspace root's, and each repository's below
    it (`vendor/x`, whose git directory is bound read-only already: the user's `git status`
    there reads an included `core.fsmonitor` as well)."""
    included = [path.resolve() for path in included_configs(top)]
    return hooks_dirs(top) + included + submodule_git_paths(top)


def setting_skill_folders(workdir: Path, paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The folders the `skill_paths` setting names, as skill discovery reads them: `~`
    expanded, a relative one taken from `workdir`. Inside a workspace root they are protected
    as a project's skill folders are: what is planted there goes into the next run's prompt."""
    found: list[Path] = []
    for raw in paths:
        path = Path(os.path.expanduser(raw))
        found.append(path if path.is_absolute() else workdir / path)
    return found


def folders_holding_no_root(folders: Iterable[str | Path], roots: Iterable[Path]) -> list[Path]:
    """The `folders` (resolved) that neither are nor hold one of `roots`: a skill folder the
    user made the workspace itself (developing skills there) stays theirs to write."""
    tops = [root.resolve() for root in roots]
    resolved = [Path(folder).resolve() for folder in folders]
    return [path for path in resolved if not any(top.is_relative_to(path) for top in tops)]


@functools.cache
def own_environment() -> tuple[Path, ...]:
    """Where the Python environment running loopwright keeps code it runs (resolved): the
    whole virtual environment when it is one (`bin/activate`, `pyvenv.cfg` too), else its
    site-packages directories (not a system prefix such as `/usr`, which may hold a project)."""
    if sys.prefix != sys.base_prefix:
        found = [sys.prefix]
    else:
        paths = sysconfig.get_paths()
        found = [paths["purelib"], paths["platlib"]]
    return tuple(dict.fromkeys(Path(path).resolve() for path in found))


def protected_reason(path: Path, extra: Iterable[str | Path] = ()) -> str | None:
    """Why writing `path` (absolute, resolved) could plant something run later or loosen the
    agent's own safety, else None. `extra`: more protected files or directories (hook scripts,
    configured git hooks directories)."""
    parts = tuple(part.casefold() for part in path.parts)  # `.GIT` is `.git` on macOS
    for entry in PROTECTED_ENTRIES:
        wanted = _folded_parts(entry.relative)
        width = len(wanted)
        if any(parts[i:i + width] == wanted for i in range(len(parts) - width + 1)):
            return entry.reason
    if parts and parts[-1].endswith(WORKSPACE_FILE_SUFFIX):
        return _WORKSPACE_FILE
    explicit = os.environ.get("LOOPWRIGHT_CONFIG")
    if explicit and _same(path, Path(explicit)):
        return "it is the loopwright configuration file named by LOOPWRIGHT_CONFIG"
    if _within(path, user_config_dir()):
        return "it is in the user's loopwright configuration directory"
    if any(_within(path, environment) for environment in own_environment()):
        return _OWN_ENVIRONMENT
    home = Path.home()
    if any(_within(path, home / name) for name in HOME_STARTUP_FILES):
        return _STARTUP
    for other in extra:
        if _within(path, Path(other).expanduser()):
            return "a configured hook or MCP server runs it"
    return None


def protected_entry_at(parts: tuple[str, ...]) -> str | None:
    """The entry of `PROTECTED_ENTRIES` the path of `parts` (relative to a root) ends with, in
    any case (`pkg/.Claude`, `.agents/skills`), else None: a protected name at any depth."""
    folded = tuple(part.casefold() for part in parts)
    for entry in PROTECTED_ENTRIES:
        wanted = _folded_parts(entry.relative)
        if folded[-len(wanted):] == wanted:
            return entry.relative
    return None


@functools.cache
def _folded_parts(relative: str) -> tuple[str, ...]:
    return tuple(part.casefold() for part in PurePath(relative).parts)


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
