"""How an error names the setting that fixes it: the `loopwright` command's flag when the
command made the agent (its entry point says so, `for_the_command_line`); for the library, the
keyword argument, the flag named after it.

A process-wide switch, not a context variable: the command's runs, servers and threads all
speak to someone at its command line, and a library never runs the command's entry point."""

from __future__ import annotations

_command_line = False


def for_the_command_line() -> None:
    """Name only the command's flags from now on (called by the command's entry point)."""
    global _command_line
    _command_line = True


def at_the_command_line() -> bool:
    """Whether the `loopwright` command made the agent (errors name its flags only)."""
    return _command_line


def pass_setting(flag: str, library: str) -> str:
    """`flag` at the command line (`--api-key`); else `library` (`Agent(api_key=…)`), then
    the flag: `Agent(api_key=…) (--api-key on the command line)`."""
    return flag if _command_line else f"{library} ({flag} on the command line)"
