"""Offline model metadata: context windows and output limits of well-known hosted models.

The table ships as `models.json` next to this module; a user file at
`~/.config/loopwright/models.json` (same shape) adds or overrides entries, and `register_model()`
does the same from code. Prices are not duplicated here: `ModelInfo.price` comes from
`loopwright.profiles.prices`, the one price table.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from loopwright.profiles.prices import Price, price_for


@dataclass(kw_only=True, frozen=True, slots=True)
class ModelInfo:
    """What the metadata table knows about one model (windows in tokens)."""

    name: str  # the table key that matched
    context_window: int
    max_output_tokens: int | None = None
    price: Price | None = None


_lock = threading.Lock()
_table: dict[str, dict[str, Any]] | None = None
_registered: dict[str, dict[str, Any]] = {}


def bare_model_name(model: str) -> str:
    """`anthropic:claude-x`, `openrouter:openai/gpt-4o`, `gpt-4o@2024` → the lower-case name.

    An Ollama tag (`qwen2.5:7b`) is kept apart from a provider prefix by its shape: a provider
    prefix is letters only."""
    name = model.strip().lower()
    prefix, colon, rest = name.partition(":")
    if colon and prefix.replace("-", "").isalpha() and rest:
        name = rest
    return name.rsplit("/", 1)[-1]


def _user_table_path() -> Path:
    home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(home) / "loopwright" / "models.json"


def _read_table(text: str) -> dict[str, dict[str, Any]]:
    data = json.loads(text)
    models = data.get("models", {}) if isinstance(data, dict) else {}
    return {str(k).lower(): v for k, v in models.items() if isinstance(v, dict)}


def _load() -> dict[str, dict[str, Any]]:
    global _table
    with _lock:
        if _table is None:
            packaged = resources.files("loopwright.profiles").joinpath("models.json")
            table = _read_table(packaged.read_text(encoding="utf-8"))
            user_file = _user_table_path()
            # a broken user file must not stop runs: the packaged table stands
            with contextlib.suppress(OSError, ValueError):
                if user_file.is_file():
                    table.update(_read_table(user_file.read_text(encoding="utf-8")))
            _table = table
        return {**_table, **_registered}


def register_model(name: str, *, context_window: int, max_output_tokens: int | None = None) -> None:
    """Add or override one entry (a name prefix) for this process."""
    with _lock:
        _registered[name.lower()] = {"context_window": context_window,
                                     "max_output_tokens": max_output_tokens}


def _matches(name: str, key: str) -> bool:
    if name == key:
        return True
    # a family prefix followed by a separator: "gpt-4o-2024-08-06", "gpt-5.1", "qwen2.5:7b";
    # "gpt-4" must not claim "gpt-4o"
    return name.startswith(key) and name[len(key)] in "-.:@_ "


def model_info(model: str) -> ModelInfo | None:
    """Metadata for `model` (provider prefixes and vendor paths ignored), or None if unknown."""
    name = bare_model_name(model)
    table = _load()
    best = max((key for key in table if _matches(name, key)), key=len, default=None)
    if best is None:
        return None
    entry = table[best]
    window = entry.get("context_window")
    if not isinstance(window, int) or window <= 0:
        return None
    max_out = entry.get("max_output_tokens")
    return ModelInfo(name=best, context_window=window,
                     max_output_tokens=max_out if isinstance(max_out, int) else None,
                     price=price_for(model))
