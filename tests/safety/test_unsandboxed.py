"""Where no sandbox can be made, only plainly read-only commands run without approval."""

from __future__ import annotations

import pytest

from loopwright.safety.sandbox import is_plainly_read_only


@pytest.mark.parametrize("command", [
    "ls", "ls -la src", "pwd", "cat README.md", "head -n 20 src/main.py", "wc -l a.txt b.txt",
    "grep -rn TODO src", "diff a.txt b.txt", "echo hello", "git_notes_are_not_git",
])
def test_plain_read_only_commands_run(command: str) -> None:
    assert is_plainly_read_only(command) == (command != "git_notes_are_not_git")


@pytest.mark.parametrize("command", [
    "touch x", "rm -rf build", "ls; rm x", "ls && rm x", "cat a > b", "cat a | sh",
    "echo $(rm x)", "echo `rm x`", "cat $HOME/.ssh/id_rsa", "cat /etc/shadow", "cat ../x",
    "cat ~/.aws/credentials", "cat .env", "cat id_rsa", "cat *", "cat .e?v", "ls 'x'",
    "find . -delete", "git status", "env rm x", "sort -o out in", "python -c 1", "date -s 1",
    "head --file=../x", "echo hi\nrm x", "",
])
def test_anything_else_needs_approval(command: str) -> None:
    assert not is_plainly_read_only(command)
