"""Catastrophic commands spotted in raw text, for command lines the parser cannot read.

An unreadable command already needs approval; these checks make sure that `--yes` still never
runs `rm -rf / 'unfinished` or `{rm,-rf,/}` just because the grammar gave up on it.
"""

from __future__ import annotations

import re
import shlex

# bounded repeats: an unbounded `\w+` backtracks quadratically over a long word
_FORK_BOMB = re.compile(r"(?<![\w:])(\w{1,64}|:)\s*\(\)\s*\{[^}]{0,200}\1\s*\|\s*\1\s*&"
                        r"[^}]{0,200}\}")
_MKFS = re.compile(r"(?:^|[\s;&|(`/{,])(?:mkfs(?:\.\w+)?|mke2fs)\b")
_DEVICE = r"/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|md|dm-|mapper/|loop)\w*"
_DEVICE_WRITE = re.compile(rf"(?:\bof=|>\s*){_DEVICE}")
_BRACES = re.compile(r"\{([^{}\s]*,[^{}\s]*)\}")
_VITAL = frozenset({"/", "~", "$HOME", "${HOME}", "/bin", "/boot", "/dev", "/etc", "/home",
                    "/lib", "/lib64", "/opt", "/proc", "/root", "/sbin", "/sys", "/usr", "/var"})


def raw_catastrophic(command: str) -> str | None:
    """Why the raw text looks catastrophic, or None (a last line of defence, not a parser)."""
    text = _BRACES.sub(lambda m: m.group(1).replace(",", " "), command[:65536])
    text = text.replace("\\", "").replace("''", "").replace('""', "")
    if _FORK_BOMB.search(text):
        return "a fork bomb"
    if _MKFS.search(text):
        return "formatting a file system (mkfs)"
    if _DEVICE_WRITE.search(text):
        return "writing directly to a block device"
    for segment in re.split(r"[;&|\n()`]+|\$\(", text):
        try:
            words = shlex.split(segment, comments=True)
        except ValueError:
            words = segment.split()
        target = _rm_target(words)
        if target is not None:
            return f"recursively deleting {target}"
    return None


def _rm_target(words: list[str]) -> str | None:
    starts = [i for i, word in enumerate(words) if word.rsplit("/", 1)[-1] == "rm"]
    if not starts:
        return None
    rest = words[starts[0] + 1:]
    flags = [w for w in rest if w.startswith("-")]
    if not any(f == "--recursive" or (not f.startswith("--") and ("r" in f or "R" in f))
               for f in flags):
        return None
    for target in (w for w in rest if not w.startswith("-")):
        normal = re.sub(r"/+", "/", target)
        while normal.endswith(("/*", "/.")) and len(normal) > 2:
            normal = normal[:-2]
        normal = "/" if normal in ("/*", "/.") else (normal.rstrip("/") or "/")
        if normal in _VITAL:
            return target
    return None
