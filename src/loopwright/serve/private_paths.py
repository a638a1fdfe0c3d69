"""The server's own paths, kept out of what it answers: an error's text names the session
database, the workspace or a file under the user's home for the operator reading the log, and
tells a client (who holds the token, maybe on another machine) nothing it needs."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path

HIDDEN = "(a path on the server)"
logger = logging.getLogger("loopwright.serve")

_PATH_TAIL = r"[^\s'\"`:;,)\]]*"  # a path goes on to the next space, quote or separator


class PrivatePaths:
    """Hides every path under the given roots (and their resolved forms) in a text."""

    def __init__(self, roots: Iterable[str | Path | None]) -> None:
        found: set[str] = set()
        for root in roots:
            if root is None or str(root) in ("", ":memory:"):
                continue
            path = Path(root).expanduser()
            for form in (path, path.resolve()):
                if len(form.parts) > 1:  # "/" itself would hide every route's name
                    found.add(str(form).rstrip(os.sep))
        alternatives = "|".join(re.escape(root) for root in sorted(found, key=len, reverse=True))
        self._pattern = re.compile(f"(?:{alternatives})(?![^/{os.sep}\\s'\"`:;,)\\]])"
                                   f"{_PATH_TAIL}") if found else None

    def hide(self, text: str) -> str:
        return self._pattern.sub(HIDDEN, text) if self._pattern is not None else text

    def answerable(self, text: str, context: str) -> str:
        """`text` for a client; when it named a path, the whole of it goes to the log."""
        shown = self.hide(text)
        if shown != text:
            logger.warning("%s: %s", context, text)
        return shown


def server_paths(*, store: object, workdir: str | Path | None,
                 others: Iterable[Path] = ()) -> PrivatePaths:
    """The roots to hide: the user's home and config dir, the workspace, the process's working
    directory, the session database's file and directory, and `others` (batch results)."""
    from loopwright.config import user_config_dir

    database = getattr(getattr(store, "sync", store), "path", None)  # SQLite's; PostgreSQL: none
    files = [Path(database)] if isinstance(database, (str, Path)) else []
    return PrivatePaths([Path.home(), user_config_dir(), workdir, Path.cwd(),
                         *files, *(file.parent for file in files), *others])
