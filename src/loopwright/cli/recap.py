"""What a resumed session was about, and which sessions there are to resume.

`recap` is shown when `run --resume`/`--continue`, `chat --resume`, `sessions resume` or
`/resume ID` continue a session: its title, size and age, the last request and the last answer,
each on one line. `picker` lists the recent sessions of this directory, numbered, with their
dates and first messages, for chat's `/resume` alone. Everything shown came from the store (what
a model wrote, among others), so it is printed through the inert notes of the renderer.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from loopwright.messages import Message
    from loopwright.store import SessionInfo

LINE_WIDTH = 100
"""Characters of a message shown in a recap or picker line (cut after a whole word)."""
PICKER_SIZE = 9
"""Sessions `/resume` offers (one digit each)."""


def recap(session_id: str, *, db: str | None = None) -> list[str]:
    """Lines recalling a stored session, or [] when it cannot be read (a new session id)."""
    from loopwright.cli.store import open_browser, store_path
    from loopwright.errors import LoopwrightError

    location = store_path(db)
    if isinstance(location, Path) and not location.exists():
        return []
    try:
        with open_browser(location) as store:
            info = store.get(session_id)
            history = store.load(session_id) if info is not None else []
    except LoopwrightError:
        return []
    if info is None:
        return []
    lines = [f"resumed {info.id[:8]} · {_one_line(info.title)} · {info.message_count} "
             f"messages · last run {when(info.updated)}"]
    asked = _last(history, "user")
    answered = _last(history, "assistant")
    if asked:
        lines.append(f"  you: {asked}")
    if answered:
        lines.append(f"  model: {answered}")
    return lines


def recent(*, db: str | None = None, cwd: Path | None = None) -> list[SessionInfo]:
    """The newest sessions run in `cwd` (default: here), at most `PICKER_SIZE`."""
    from loopwright.cli.store import open_browser, store_path

    location = store_path(db)
    if isinstance(location, Path) and not location.exists():
        return []
    with open_browser(location) as store:
        found = store.list_sessions(cwd=str((cwd or Path.cwd()).resolve()), limit=PICKER_SIZE)
    return [info for info in found if info.parent_id is None]


def picker(sessions: list[SessionInfo]) -> list[str]:
    """One numbered line per session: number, date, id, size, first message."""
    return [f"{number}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(info.updated))}  "
            f"{info.id[:8]}  {info.message_count:>3} msgs  {_one_line(info.title)}"
            for number, info in enumerate(sessions, start=1)]


def when(stamp: float) -> str:
    """How long ago `stamp` was, in the largest whole unit."""
    ago = max(0.0, time.time() - stamp)
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if ago >= size:
            count = int(ago // size)
            return f"{count} {unit}{'s' if count != 1 else ''} ago"
    return "just now"


def _last(history: list[Message], role: str) -> str:
    for message in reversed(history):
        if message.role == role and isinstance(message.content, str) and message.content.strip():
            return _one_line(message.content)
    return ""


def _one_line(text: str) -> str:
    from loopwright.cli.activity import cut_words

    return cut_words(" ".join(text.split()), LINE_WIDTH)
