"""What both stores' full-text search shares: a hit, the marks around its matched words, and
the words of a query (free text from a user or a model, never query syntax)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from loopwright.store.rows import damaged, is_time

_WORD = re.compile(r"\w+", re.UNICODE)
SNIPPET_START, SNIPPET_END = "\x02", "\x03"  # markers around matched words in search snippets
MAX_WORDS = 32


@dataclass(kw_only=True)
class SearchHit:
    """One matching message: where it is and a snippet with the matched words marked."""

    session_id: str
    seq: int
    role: str
    snippet: str  # matched words are wrapped in SNIPPET_START / SNIPPET_END
    title: str
    updated: float
    score: float  # lower is better (SQLite's BM25; PostgreSQL's rank, negated)


def hit_at(session_id: Any, seq: Any, role: Any, snippet: Any, title: Any, updated: Any,
           score: float) -> SearchHit:
    """A hit from its stored fields, once each is of its type (`damaged` otherwise: a row
    some other program wrote, or cut short)."""
    texts = {"id": session_id, "role": role, "content": snippet, "title": title}
    wrong = next((name for name, value in texts.items() if not isinstance(value, str)), None)
    if wrong is None and not isinstance(seq, int):
        wrong = "seq"
    if wrong is None and not is_time(updated):
        wrong = "updated"
    if wrong is not None:
        sid = session_id if isinstance(session_id, str) else "(one with no id)"
        raise damaged(sid, "a row found by the search", ValueError(f"{wrong} is not of its type"))
    return SearchHit(session_id=session_id, seq=seq, role=role, snippet=snippet, title=title,
                     updated=updated, score=score)


def search_words(text: str) -> list[str]:
    """The distinct words of `text`, lower-cased, in order (at most MAX_WORDS)."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))[:MAX_WORDS]


def fts_query(text: str, *, any_word: bool = False) -> str:
    """A safe FTS5 query for free text: each word quoted; all words required unless `any_word`."""
    return (" OR " if any_word else " ").join(f'"{w}"' for w in search_words(text))
