"""Paths in shell words: normalised (`./a//b/../c/` → `a/c/`) and made absolute against the
directory a command runs in, so that the policy compares one spelling of each path."""

from __future__ import annotations

import posixpath


def normalise_path_word(word: str) -> str:
    """`./a//b/../c/` → `a/c/`; words without a slash are left alone."""
    if "/" not in word or "://" in word:
        return word
    leading = word.startswith("/")
    trailing = word.endswith("/") and word.strip("/") != ""
    normal = posixpath.normpath(word)
    if leading:
        normal = "/" + normal.lstrip("/")
    return normal + "/" if trailing and normal != "/" else normal


def join_path(cwd: str | None, path: str) -> str | None:
    """`path` made absolute against `cwd` and normalised (None if `cwd` is unknown)."""
    if path.startswith("/"):
        return normalise_path_word(path).rstrip("/") or "/"
    if cwd is None:
        return None
    return normalise_path_word(posixpath.join(cwd, path)).rstrip("/") or "/"
