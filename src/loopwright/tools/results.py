"""A tool's return value as the text the model reads."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any


def render_result(value: Any) -> str:
    """A tool's return value as the text the model reads."""
    if isinstance(value, str):
        return value if value else "(no output)"
    if value is None:
        return "(no output)"
    # a pydantic model can only exist once pydantic is imported: no need to import it here
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        dumped: str = value.model_dump_json()
        return dumped
    try:
        return json.dumps(value, ensure_ascii=False, default=_jsonable)
    except (TypeError, ValueError):  # a cycle, or a key JSON cannot have
        return str(value)


def _jsonable(value: Any) -> Any:
    """`json.dumps`'s fallback: what pydantic can make JSON of (dataclasses, dates, UUIDs, paths,
    sets…) as that JSON, anything else as its text. Only a result with such a value pays the
    import. An iterator stays its text: reading it could take forever (`itertools.count()`)."""
    from pydantic_core import to_jsonable_python

    if isinstance(value, Iterator):
        return str(value)
    try:
        return to_jsonable_python(value, fallback=str)
    except ValueError:  # bytes that are not UTF-8
        return str(value)
