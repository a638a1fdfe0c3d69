"""`module:attribute` names: how flags, config and batch files point at Python objects."""

from __future__ import annotations

import importlib
from typing import Any


def import_attribute(name: str) -> Any:
    """The object `name` (`package.module:attribute`, the attribute may be dotted) names.

    Raises `ValueError` with a one-line reason: not of that form, the module cannot be imported
    (or failed while importing), or it has no such attribute."""
    module_name, sep, attribute = name.partition(":")
    if not sep or not module_name.strip() or not attribute.strip():
        raise ValueError(f"{name!r} is not 'module:attribute'")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r} ({exc})") from exc
    except Exception as exc:  # the module's own code failed: still one line, not a traceback
        raise ValueError(f"importing {module_name!r} failed: {type(exc).__name__}: {exc}"
                         ) from exc
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ValueError(f"{module_name} has no attribute {attribute!r}") from None
    return found
