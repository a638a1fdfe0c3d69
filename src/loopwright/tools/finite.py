"""NaN and infinity written as text. The JSON literals are refused as the arguments are parsed
(`arguments.parse_arguments`), but pydantic's lax mode reads the text "NaN", "-Infinity" or
"1e999" into a `float` parameter as NaN or infinity: a model — or a page it read, steering
it — would hand a tool a number no comparison bounds (`nan > limit` is false, so is
`nan <= limit`). Such a value is refused with the literal's error, unless the parameter says
it takes one (`Field(allow_inf_nan=True)`, `confloat(allow_inf_nan=True)`, or its model's
`allow_inf_nan` setting).

Only the values the model sent are checked (a model's `model_fields_set`, a dataclass field
other than its default): a default of `math.inf` is the tool's own choice."""

from __future__ import annotations

import cmath
import dataclasses
import re
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from loopwright.arguments import non_finite_error

if TYPE_CHECKING:
    import pydantic


_Children = list[tuple[Any, str, bool]]  # (value, its dotted path, whether it may be NaN)


def refuse_non_finite_text(sent: dict[str, Any], validated: pydantic.BaseModel) -> None:
    """`ArgumentsError` for a NaN or infinity in `validated` that came from text in `sent`,
    where the field holding it does not take one. Costs one look at `sent`'s strings when
    none of them reads as such a number (the common case)."""
    import pydantic

    if not _has_non_finite_text(sent):
        return
    stack: _Children = [(validated, "", False)]
    while stack:
        value, path, allowed = stack.pop()
        if isinstance(value, float | complex):
            if not (allowed or cmath.isfinite(value)):
                raise non_finite_error(value, path)
        elif isinstance(value, pydantic.BaseModel):
            stack.extend(_model_children(value, path, allowed))
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            stack.extend(_dataclass_children(value, path, allowed))
        elif isinstance(value, Mapping):
            stack.extend((child, _joined(path, key), allowed) for key, child in value.items())
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend((child, _joined(path, index), allowed)
                         for index, child in enumerate(value))


# how every text `complex` reads as a number begins ("(inf+1j)", " -nan", "٩e999")
_NUMBER_LIKE = re.compile(r"\s*\(?\s*[-+]?[\d.iInN]")


def _has_non_finite_text(value: Any) -> bool:
    """Whether any string in `value` (parsed JSON: dicts, lists, scalars) reads as NaN or an
    infinity, as Python's `complex` (and `float`, and pydantic's, which take the same
    spellings) reads it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and _NUMBER_LIKE.match(item):  # (not a file's text)
            try:  # (a `complex` parameter reads "inf+1j")
                if not cmath.isfinite(complex(item)):
                    return True
            except ValueError:
                pass
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _model_children(model: pydantic.BaseModel, path: str, allowed: bool) -> _Children:
    cls = type(model)
    allowed = allowed or cls.model_config.get("allow_inf_nan") is True
    fields = cls.model_fields
    return [(getattr(model, name), _joined(path, info.alias or name),
             allowed or _takes_non_finite(info.metadata, info.annotation))
            for name, info in fields.items() if name in model.model_fields_set]


def _dataclass_children(instance: Any, path: str, allowed: bool) -> _Children:
    cls = type(instance)
    config = getattr(cls, "__pydantic_config__", None) or {}
    allowed = allowed or config.get("allow_inf_nan") is True
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # a hint that does not resolve here: no allowance read from it
        hints = {}
    children = []
    for field in dataclasses.fields(instance):
        value = getattr(instance, field.name)
        if value is field.default:  # not sent: the dataclass's own default
            continue
        children.append((value, _joined(path, field.name),
                         allowed or _takes_non_finite((), hints.get(field.name))))
    return children


def _takes_non_finite(metadata: typing.Iterable[Any], annotation: Any) -> bool:
    """Whether a field's constraints, or any `Annotated` part of its type (`list[Annotated[float,
    Field(allow_inf_nan=True)]]`), say it takes NaN and infinities."""
    from pydantic.fields import FieldInfo

    stack = [*metadata, annotation]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if getattr(item, "allow_inf_nan", None) is True:
            return True
        if isinstance(item, FieldInfo):  # a `Field(...)` in `Annotated`: its constraints
            stack.extend(item.metadata)
        stack.extend(getattr(item, "__metadata__", ()))
        stack.extend(typing.get_args(item))
    return False


def _joined(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)
