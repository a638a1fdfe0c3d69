"""A real terminal for tests: tmux, one server per test (`-S` socket in the test's temp dir), so
nothing is shared with the machine's tmux or with another test. `pane` is the fixture
(tests/cli/conftest.py)."""

from __future__ import annotations

import contextlib
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from shared_helpers import cli_env, require_component

TMUX = shutil.which("tmux")


class Pane:
    """One tmux pane running one command; the command's exit status is printed when it ends."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        return subprocess.run([TMUX, "-S", str(self.socket), *args], check=True,
                              capture_output=True, text=True, timeout=30).stdout

    def start(self, args: list[str], *, cwd: Path, width: int = 80, height: int = 30,
              shell: bool = False, after: float = 0.0, **extra_env: str) -> None:
        """`shell`: typed at an interactive bash, which has job control (Ctrl-Z, `fg`). `after`:
        seconds before the command starts, the terminal in its own mode with no reader."""
        env = cli_env(cwd, TERM="xterm-256color", COLUMNS=str(width), LINES=str(height))
        env.pop("NO_COLOR", None)
        env.update(extra_env, PS1="$ ")
        exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items()
                           if key.isidentifier())
        loopwright = f"{shlex.quote(sys.executable)} -m loopwright {shlex.join(args)}"
        command = f"sleep {after}; env -i {exports} {loopwright}; echo \"[exit $?]\"; sleep 120"
        if shell:
            command = f"env -i {exports} bash --norc --noprofile -i"
        self.tmux("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), "-c",
                  str(cwd), command)
        if shell:
            # one job: stopping a command of a list typed at bash would start the next one
            self.wait_for(lambda shown: shown.rstrip().endswith("$"), "the shell's prompt")
            self.type(f"({loopwright}; echo \"[exit $?]\")")
            self.keys("Enter")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "t", "-l", text)

    def paste(self, text: str) -> None:
        """A bracketed paste, as a terminal sends one when text is pasted into it."""
        self.tmux("set-buffer", "-b", "p", text)
        self.tmux("paste-buffer", "-p", "-b", "p", "-t", "t")

    def screen(self, *, ansi: bool = False, history: bool = False) -> str:
        """What the pane shows; with `history`, what scrolled off its top too."""
        return self.tmux("capture-pane", "-p", *(["-e"] if ansi else []),
                         *(["-S", "-"] if history else []), "-t", "t")

    def wait_for(self, check: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + 45
        while True:
            shown = self.screen()
            if check(shown):
                return shown
            if time.monotonic() > deadline:
                raise AssertionError(f"gave up waiting for {what}; the screen was:\n{shown}")
            time.sleep(0.1)

    def wait_text(self, text: str) -> str:
        return self.wait_for(lambda shown: text in shown, repr(text))


@contextlib.contextmanager
def open_pane(tmp_path: Path) -> Iterator[Pane]:
    """A `Pane` on its own tmux server, killed on the way out (the test skipped without tmux)."""
    require_component(TMUX is not None, "tmux drives the terminal tests: apt-get install tmux")
    shown = Pane(tmp_path / "tmux.sock")
    try:
        yield shown
    finally:
        subprocess.run([TMUX or "tmux", "-S", str(shown.socket), "kill-server"],
                       capture_output=True, timeout=30)
