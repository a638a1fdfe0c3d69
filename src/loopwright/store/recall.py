"""Recall (`Settings.recall`): past sessions matching the prompt, as a note on the first request.

At the first turn of a run the store is searched (FTS5, BM25 ranking) for the user's prompt; the
best hits, one per session, are attached to that request as a labelled note. The note is
ephemeral: it is not added to the history and not stored.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from loopwright.errors import LoopwrightError
from loopwright.messages import Message, ModelRequest
from loopwright.plugins import LoopPlugin

if TYPE_CHECKING:
    from loopwright.plugins import RunView
    from loopwright.store.sqlite import SearchHit

RECALL_HEADER = ("<recall>\nFrom earlier sessions (search hits for this request; they may be "
                 "stale or irrelevant, use them only if they help):")
RECALL_FOOTER = "</recall>"
HITS_PER_SESSION = 2  # e.g. a question and its answer


@runtime_checkable
class SearchableStore(Protocol):
    """A store that can search message text (the SQLite and PostgreSQL stores can)."""

    async def search(self, text: str, *, limit: int = 10, any_word: bool = False,
                     exclude_session: str | None = None, cwd: str | None = None
                     ) -> list[SearchHit]:
        """Matching messages, best first."""


class RecallPlugin(LoopPlugin):
    """Attaches the top `limit` past-session hits for the prompt to the run's first request."""

    def __init__(self, store: SearchableStore, *, limit: int = 3) -> None:
        self.store = store
        self.limit = limit

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        if run.turn != 1:
            return
        prompt = next((m.content for m in reversed(run.history) if m.role == "user"), "")
        note = await recall_note(self.store, prompt, exclude_session=run.session_id,
                                 limit=self.limit)
        if note:
            request.messages = attach_note(request.messages, note)
            run.status("recall", "recalled matching messages from past sessions",
                       {"chars": len(note)})


async def recall_note(store: SearchableStore, prompt: str, *, exclude_session: str | None,
                limit: int = 3) -> str:
    """The recall note for `prompt` ("" when nothing matches)."""
    try:
        hits = await store.search(prompt, any_word=True, exclude_session=exclude_session,
                            limit=limit * 8)
    except LoopwrightError:
        return ""  # recall is a bonus: a busy or broken store must not stop the run
    chosen: dict[str, list[SearchHit]] = {}
    for hit in hits:  # best first: keep each session's best HITS_PER_SESSION
        if hit.session_id not in chosen and len(chosen) == limit:
            continue
        kept = chosen.setdefault(hit.session_id, [])
        if len(kept) < HITS_PER_SESSION:
            kept.append(hit)
    if not chosen:
        return ""
    lines = [RECALL_HEADER]
    for hit in (h for kept in chosen.values() for h in sorted(kept, key=lambda h: h.seq)):
        day = time.strftime("%Y-%m-%d", time.localtime(hit.updated))
        snippet = " ".join(hit.snippet.replace("\x02", "").replace("\x03", "").split())
        title = f' "{hit.title}"' if hit.title else ""
        lines.append(f"- [{day}, session {hit.session_id[:8]}{title}] {hit.role}: {snippet}")
    lines.append(RECALL_FOOTER)
    return "\n".join(lines)


def attach_note(history: list[Message], note: str) -> list[Message]:
    """`history` with `note` added to its last user message (a new message, never a mutation)."""
    if history and history[-1].role == "user":
        last = history[-1]
        return [*history[:-1], Message(role="user", content=f"{last.content}\n\n{note}")]
    return [*history, Message(role="user", content=note)]
