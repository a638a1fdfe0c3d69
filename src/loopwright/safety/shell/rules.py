"""Danger in one simple command: catastrophic (never run) or dangerous (needs the user's yes).

Targets are judged after normalisation (`/./`, `//`, `/usr/..` are `/`; `~`, `$HOME` are the
home directory; a relative path joins the directory an earlier `cd` moved to) and after every
value a word could take (`${X:-/}` may be `/`; `"$DIR"/` is `/` when DIR is empty). Globs are
catastrophic when they can match a system directory or everything in the home directory.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Iterator

from loopwright.safety.protected import HOME_STARTUP_FILES
from loopwright.safety.sensitive import is_secret_path
from loopwright.safety.shell.parse import SimpleCommand
from loopwright.safety.shell.paths import join_path
from loopwright.safety.shell.words import Word
from loopwright.safety.shell.wrappers import GIT_RUNS_COMMANDS as _GIT_RUNS_COMMANDS

TOP_LEVEL = frozenset({
    "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt", "opt",
    "proc", "root", "run", "sbin", "snap", "srv", "sys", "usr", "var", "Users", "System",
    "Library", "Applications", "private",
})
_DEEP_SYSTEM = frozenset({"/usr/bin", "/usr/lib", "/usr/lib64", "/usr/local", "/usr/sbin",
                          "/usr/share", "/usr/include", "/var/lib", "/etc/ssh"})
_SYSTEM_WRITE_ROOTS = ("/etc", "/usr", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                       "/opt", "/sys", "/proc", "/var/lib", "/root", "/srv", "/System",
                       "/Library")
_PROBE_NAMES = ("usr", "etc", "bin", "home", "var", "lib", "Documents", ".ssh", ".config",
                "src", "a", "projects", ".bashrc")
_BLOCK_DEVICE = re.compile(r"^/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|md|dm-|mapper/|loop|"
                           r"nbd|zd|bcache|sr|ram|mtd|root$)")
_MKFS = re.compile(r"^(?:mkfs(?:\..+)?|mke2fs|mkdosfs|mkntfs|mkexfatfs|mkfs_\w+|newfs\w*|"
                   r"mkswap)$")
_DISK_TOOLS = frozenset({"fdisk", "sfdisk", "gdisk", "sgdisk", "cfdisk", "parted", "wipefs",
                         "shred", "cryptsetup", "blkdiscard", "hdparm", "diskutil", "badblocks",
                         "debugfs", "tune2fs", "e2fsck", "fsck", "zpool", "lvremove", "vgremove",
                         "pvremove"})
_SUPERUSER = frozenset({"sudo", "doas", "pkexec", "su", "run0", "runuser", "sudoedit"})
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff", "telinit"})
_FIND_FILTERS = frozenset({
    "-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-wholename", "-iwholename",
    "-newer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size", "-empty",
    "-user", "-group", "-perm", "-inum", "-samefile", "-links", "-uid", "-gid", "-lname",
    "-ilname", "-newermt", "-prune"})
_COPY_COMMANDS = frozenset({"cp", "mv", "install", "ln", "rsync", "scp"})


class Targets:
    """Which resolved paths are catastrophic to delete or write, for one user."""

    def __init__(self, home: str) -> None:
        home = posixpath.normpath(home) if home else "/root"
        ancestors = set()
        current = home
        while current not in ("/", ""):
            ancestors.add(current)
            current = posixpath.dirname(current)
        self.home = home
        self.paths = frozenset({"/", *(f"/{name}" for name in TOP_LEVEL), *_DEEP_SYSTEM,
                                *ancestors})

    def catastrophic(self, path: str) -> bool:
        """`path` (absolute, normalised, maybe a glob) names or can match a vital directory."""
        if not any(ch in path for ch in "*?["):
            return path in self.paths
        parts = path.split("/")
        glob_at = next(i for i, part in enumerate(parts) if any(ch in part for ch in "*?["))
        directory = "/".join(parts[:glob_at]) or "/"
        if directory not in self.paths:
            return False
        pattern = parts[glob_at]
        probes = [*_PROBE_NAMES, *(posixpath.basename(p) for p in self.paths
                                   if posixpath.dirname(p) == directory)]
        return any(fnmatch.fnmatchcase(name, pattern) for name in probes)


def resolved_values(word: Word, cwd: str | None) -> Iterator[str]:
    """Every absolute, normalised path `word` could name (its unknown parts as text, then as
    nothing: `"$DIR"/` may be `/`)."""
    seen: set[str] = set()
    values = [*word.candidates, *(word.stripped if word.computed else ())]
    for value in values:
        if value == "" or (value.startswith("-") and not word.computed):
            continue
        path = join_path(cwd, value or ".")
        if path is not None and path not in seen:
            seen.add(path)
            yield path


def flags_and_operands(words: tuple[Word, ...]) -> tuple[list[str], list[Word]]:
    """GNU-style: dash words anywhere are options, until `--`."""
    flags: list[str] = []
    operands: list[Word] = []
    dashes = False
    for word in words:
        if word.value == "--" and not dashes:
            dashes = True
        elif word.value.startswith("-") and len(word.value) > 1 and not dashes:
            flags.append(word.value)
        else:
            operands.append(word)
    return flags, operands


def _recursive(flags: list[str]) -> bool:
    return any(f in ("--recursive", "-R") or (not f.startswith("--") and ("r" in f or "R" in f))
               for f in flags)


# --- catastrophic ---------------------------------------------------------------------------------


def catastrophic(command: SimpleCommand, targets: Targets) -> str | None:
    """Why this command must never run, or None."""
    name = command.name
    if _MKFS.match(name) and name != "mkswap":
        return f"formatting a file system ({name})"
    device = _device_written(command)
    if device is not None:
        return f"writing directly to the block device {device}"
    flags, operands = flags_and_operands(command.words[1:])
    if name == "rm" and _recursive(flags):
        return _vital(operands, command.cwd, targets, "recursively deleting")
    if name == "find" and "-delete" in command.argv:
        roots = _find_roots(command)
        if not _FIND_FILTERS.intersection(command.argv):
            return _vital(roots, command.cwd, targets, "deleting everything under")
    if name in ("chmod", "chown", "chgrp") and ("-R" in flags or "--recursive" in flags or
                                               any(re.fullmatch(r"-[a-zA-Z]*R[a-zA-Z]*", f)
                                                   for f in flags)):
        return _vital(operands[1:], command.cwd, targets, f"recursively changing ({name})")
    if name == "rsync" and _rsync_deletes(flags) and operands:
        return _vital(operands[-1:], command.cwd, targets, "deleting everything under")
    if name == "mv" and operands:
        target = _target_directory(command)
        moved = [w for w in operands if w is not target] if target else operands[:-1]
        return _vital(moved, command.cwd, targets, "moving away")
    return None


def _rsync_deletes(flags: list[str]) -> bool:
    """`--delete` and its kinds, `--remove-source-files`: rsync deletes files."""
    return any(f.startswith(("--delete", "--del")) or f == "--remove-source-files"
               for f in flags)


def _target_directory(command: SimpleCommand) -> Word | None:
    """The `-t DIR` / `--target-directory[=]DIR` of cp, mv, ln or install, if given so (rsync's
    and scp's `-t` mean something else)."""
    if command.name not in ("cp", "mv", "ln", "install"):
        return None
    for index, word in enumerate(command.words[1:], start=1):
        if word.value.startswith("--target-directory="):
            value = word.value.split("=", 1)[1]
            return Word(value=value, candidates=tuple(c.split("=", 1)[-1]
                                                      for c in word.candidates),
                        computed=word.computed)
        if word.value in ("-t", "--target-directory") and index + 1 < len(command.words):
            return command.words[index + 1]
    return None


def _vital(words: list[Word], cwd: str | None, targets: Targets, verb: str) -> str | None:
    for word in words:
        for path in resolved_values(word, cwd):
            if targets.catastrophic(path):
                shown = "~" if path == targets.home else path
                return f"{verb} {shown}" + (f" (from {word.value!r})"
                                            if word.value not in (path, shown) else "")
    return None


def _find_roots(command: SimpleCommand) -> list[Word]:
    roots: list[Word] = []
    for word in command.words[1:]:
        if word.value in ("-H", "-L", "-P"):
            continue
        if word.value.startswith(("-", "(", "!")):
            break
        roots.append(word)
    return roots or [Word.literal(".")]


def _device_written(command: SimpleCommand) -> str | None:
    for word in written_words(command):
        for value in word.candidates:
            path = join_path(command.cwd, value) if value else None
            if path is not None and _BLOCK_DEVICE.match(path):
                return path
    if command.name in ("wipefs", "shred", "blkdiscard"):
        for word in command.words[1:]:
            if _BLOCK_DEVICE.match(word.value):
                return word.value
    return None


def written_words(command: SimpleCommand) -> list[Word]:
    """The words naming files this command writes: redirect targets, `tee` files, copy
    destinations, `dd of=`, download outputs, `sed -i` / `truncate` files."""
    out = [r.target for r in command.redirects if r.writes]
    name = command.name
    flags, operands = flags_and_operands(command.words[1:])
    if name == "tee":
        out += operands
    elif name in _COPY_COMMANDS and (len(operands) >= 2 or _target_directory(command)):
        out.append(_target_directory(command) or operands[-1])
    elif name == "dd":
        out += [Word(value=w.value[3:], candidates=tuple(c[3:] for c in w.candidates),
                     computed=w.computed) for w in command.words[1:] if w.value.startswith("of=")]
    elif name == "sort":
        words = command.words[1:]
        out += [words[i + 1] for i, w in enumerate(words[:-1]) if w.value in ("-o", "--output")]
        out += [Word(value=w.value.split("=", 1)[1], candidates=tuple(
            c.split("=", 1)[-1] for c in w.candidates), computed=w.computed)
            for w in words if w.value.startswith("--output=")]
    elif name == "uniq" and len(operands) >= 2:
        out.append(operands[1])
    elif name in ("truncate", "touch") or (name == "sed" and any(
            f.startswith(("-i", "--in-place")) for f in flags)):
        out += operands[1:] if name == "sed" else operands
    elif name in ("curl", "wget"):
        words = command.words[1:]
        out += [words[i + 1] for i, w in enumerate(words[:-1])
                if w.value in ("-o", "--output", "-O", "--output-document")]
    return out


# --- dangerous ------------------------------------------------------------------------------------


def dangerous(command: SimpleCommand, home: str,
              protected: Callable[[str], str | None]) -> str | None:
    """The kind of danger in this command that needs the user's approval, or None."""
    name = command.name
    flags, operands = flags_and_operands(command.words[1:])
    if name == "rm" and _recursive(flags):
        return "recursive delete"
    if (name == "find" and "-delete" in command.argv) or (name == "rsync" and
                                                          _rsync_deletes(flags)):
        return "recursive delete"
    if name in _SUPERUSER:
        return "superuser command"
    if _schedules(command):
        return "sets up a command to run later, outside the sandbox"
    if name == "git":
        return _git_danger(command)
    if name in _DISK_TOOLS or name == "mkswap" or (name == "dd" and any(
            w.startswith("of=") for w in command.argv)):
        return "disk tool"
    if name in _POWER or (name == "systemctl" and _has_any(command, "poweroff", "reboot",
                                                          "halt", "kexec")) or \
            (name == "init" and _has_any(command, "0", "6")):
        return "system power command"
    if (name == "kill" and "-1" in command.argv[1:] and len(command.argv) > 2) or \
            name in ("killall5",) or (name == "pkill" and _has_any(command, "-1", ".")):
        return "kill every process"
    if name in ("chmod", "chown", "chgrp"):
        danger = _permission_danger(command, flags, operands, home)
        if danger:
            return danger
    return _write_danger(command, home, protected) or _secret_danger(command)


_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l",
                               "--list", "--unset", "--unset-all", "--remove-section"})


def _schedules(command: SimpleCommand) -> bool:
    """crontab (but -l), at and batch, a systemd or launchd job enabled or started, a global git
    setting that runs a program: each runs something later, outside the sandbox too."""
    name, words = command.name, command.argv[1:]
    if name == "crontab":
        return not ({"-l"} >= set(words) and words)
    if name in ("at", "batch"):
        return not any(w in ("-l", "-r", "-d", "-c", "-V") for w in words)
    if name == "systemctl" and "--user" in words:
        return _has_any(command, "enable", "start", "link", "restart", "edit", "set-environment",
                        "import-environment")
    if name == "launchctl":
        return _has_any(command, "load", "bootstrap", "enable", "submit", "kickstart")
    if name == "git" and any(w in ("--global", "--system") for w in words):
        sub, rest = _git_subcommand(command)
        reads = rest[:1] in (["get"], ["list"]) or any(w in _GIT_CONFIG_READS for w in rest)
        return sub == "config" and not reads and any(
            _GIT_RUNS_COMMANDS.match(w.split("=", 1)[0]) for w in rest if not w.startswith("-"))
    return False


def _has_any(command: SimpleCommand, *values: str) -> bool:
    return any(value in command.argv[1:] for value in values)


def _git_subcommand(command: SimpleCommand) -> tuple[str, list[str]]:
    """`git -C x -c a=b push -f` → ("push", ["-f"])."""
    words = command.argv[1:]
    index = 0
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in ("-c", "-C", "--git-dir", "--work-tree",
                                       "--namespace", "--exec-path", "--config-env") else 1
    return (words[index], words[index + 1:]) if index < len(words) else ("", [])


def canonical_text(command: SimpleCommand) -> str | None:
    """Another spelling of the command that deny and ask rules should also see: git without
    its global options. None when there is none."""
    if command.name != "git" or len(command.words) < 2 or \
            not command.words[1].value.startswith("-"):
        return None
    sub, rest = _git_subcommand(command)
    return " ".join(["git", sub, *rest]) if sub else None


def _git_danger(command: SimpleCommand) -> str | None:
    sub, rest = _git_subcommand(command)
    if sub == "push" and any(
            w in ("--force", "-f", "--force-with-lease", "--mirror", "--delete", "-d",
                  "--prune", "--force-if-includes") or w.startswith("--force-with-lease=")
            or (re.fullmatch(r"-[a-zA-Z]*f[a-zA-Z]*", w) is not None)
            or (w.startswith("+") and len(w) > 1) or (w.startswith(":") and len(w) > 1)
            for w in rest):
        return "force push"
    if (sub == "reset" and "--hard" in rest) or (sub == "clean" and any(
            re.fullmatch(r"-[a-zA-Z]*f[a-zA-Z]*", w) or w == "--force" for w in rest)) or \
            (sub in ("checkout", "restore") and "." in rest) or \
            (sub == "branch" and any(w in ("-D", "--delete") for w in rest)) or \
            (sub == "stash" and rest[:1] in (["clear"], ["drop"])):
        return "discard git work"
    if sub == "filter-branch" or (sub == "update-ref" and "-d" in rest):
        return "rewrite git history"
    return None


def _permission_danger(command: SimpleCommand, flags: list[str], operands: list[Word],
                       home: str) -> str | None:
    recursive = any(f in ("-R", "--recursive") or re.fullmatch(r"-[a-zA-Z]*R[a-zA-Z]*", f)
                    for f in flags)
    paths = [p for word in operands[1:] for p in resolved_values(word, command.cwd)]
    if recursive and any(p.startswith(_SYSTEM_WRITE_ROOTS) or p in ("/", "/home", home)
                         for p in paths):
        return "recursive permission change on a system path"
    mode = operands[0].value if operands else ""
    if command.name == "chmod" and (re.fullmatch(r"0?[0-7]?7[0-7]7", mode) or
                                    re.search(r"[ao]\+[rwx]*w|^\+?[rwx]*w", mode)) and \
            any(not p.startswith(command.cwd or "\0") for p in paths):
        return "world-writable permissions"
    return None


def _write_danger(command: SimpleCommand, home: str,
                  protected: Callable[[str], str | None]) -> str | None:
    for word in written_words(command):
        for path in resolved_values(word, command.cwd):
            if path.startswith("/dev/"):
                continue
            if path.startswith(_SYSTEM_WRITE_ROOTS) and (
                    path in _SYSTEM_WRITE_ROOTS or path.startswith(tuple(
                        f"{root}/" for root in _SYSTEM_WRITE_ROOTS))):
                return "write to a system directory"
            if any(path == posixpath.join(home, name) or path.startswith(
                    posixpath.join(home, name) + "/") for name in HOME_STARTUP_FILES):
                return "write to a startup file (a shell, SSH, git, an editor or Python runs it)"
            reason = protected(path)
            if reason is not None:
                return f"write to protected configuration ({reason})"
    return None


def _secret_danger(command: SimpleCommand) -> str | None:
    for word in (*command.words[1:], *(r.target for r in command.redirects)):
        value = word.value.split("=", 1)[-1] if word.value.startswith("-") else word.value
        if value and is_secret_path(value):
            return f"touches a secrets file ({value})"
    return None
