"""What a structured output looks like to the model and how its reply is checked.

Any type pydantic validates works: a model, a dataclass, a TypedDict, a primitive, a list of
those or a union. Object types are sent as they are; anything else is wrapped as
`{"response": …}` because tool arguments and OpenAI's `json_schema` format need an object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Generic

import pydantic
from typing_extensions import TypeVar

from loopwright.errors import ConfigError
from loopwright.messages import ToolSpec
from loopwright.tools.schema import clean_schema, strict_schema

T = TypeVar("T", default=Any)

FINAL_TOOL = "final_result"
_WRAP_KEY = "response"
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)
_MAX_ERRORS_SHOWN = 8


@dataclass(frozen=True)
class OutputSpec(Generic[T]):
    """One output type, its schema for the model and its validator."""

    output_type: Any
    adapter: pydantic.TypeAdapter[T]
    schema: dict[str, Any]  # always an object
    wrapped: bool  # the value sits under "response"

    @classmethod
    def of(cls, output_type: Any) -> OutputSpec[Any]:
        try:
            adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(output_type)
            raw = clean_schema(adapter.json_schema())
        except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
            raise ConfigError(_unusable(output_type, exc)) from None
        if raw.get("type") == "object" and "anyOf" not in raw and raw.get("properties"):
            return cls(output_type, adapter, raw, wrapped=False)
        schema = {"type": "object", "properties": {_WRAP_KEY: _inner_schema(adapter)},
                  "required": [_WRAP_KEY], "additionalProperties": False}
        return cls(output_type, adapter, schema, wrapped=True)

    # -- to the model --

    def tool_spec(self) -> ToolSpec:
        return ToolSpec(name=FINAL_TOOL, description=(
            "Give your final answer by calling this tool with it as the arguments. The run ends "
            "when the arguments are valid; if they are not, you get the errors and try again."),
            parameters=self.schema)

    def response_format(self) -> dict[str, Any]:
        """OpenAI's `json_schema` response format (strict when the schema allows it)."""
        try:
            schema, strict = strict_schema(self.schema), True
        except ValueError:
            schema, strict = self.schema, False
        return {"type": "json_schema",
                "json_schema": {"name": FINAL_TOOL, "schema": schema, "strict": strict}}

    # -- from the model --

    def parse_arguments(self, text: str) -> T:
        """The validated value from JSON text (tool arguments or a reply); raises
        `pydantic.ValidationError` or `ValueError` with what to fix."""
        match = _FENCE.match(text)
        data = json.loads(match.group(1) if match else text)
        return self.parse_data(data)

    def parse_data(self, data: Any) -> T:
        if self.wrapped:
            if isinstance(data, dict) and set(data) == {_WRAP_KEY}:
                data = data[_WRAP_KEY]
            return self.adapter.validate_python(data)
        return self.adapter.validate_python(data)

    def partial(self, text: str) -> Any:
        """The JSON parsed so far from an incomplete text (None when nothing parses yet)."""
        head = text.lstrip()[:1]
        if head not in ("{", "["):
            return None
        import json_repair  # a repairer for partial JSON: loaded when output is streamed

        try:
            data = json_repair.loads(text)
        except Exception:  # the repairer's own failures on odd fragments: nothing to show yet
            return None
        if not data or not isinstance(data, dict if head == "{" else list):
            return None  # `{"na` repairs to a list: not a shape worth showing
        if self.wrapped and isinstance(data, dict) and _WRAP_KEY in data:
            return data[_WRAP_KEY]
        return data

    def validate_partial(self, data: Any) -> T:
        """`data` (from `partial`) validated as far as it goes: the last item of a list may be
        incomplete; a required field not there yet is still an error (`ValueError`)."""
        return self.adapter.validate_python(data, experimental_allow_partial=True)


def _unusable(output_type: Any, exc: pydantic.PydanticUserError) -> str:
    """Why `output_type` cannot be used, and what to give instead: pydantic's own advice
    (`arbitrary_types_allowed=True`, `__get_pydantic_core_schema__`) is about a model config the
    user does not write here, and an arbitrary type would have no schema for the model anyway."""
    first = str(exc).splitlines()[0]
    if exc.code == "typed-dict-version":  # its advice, use typing_extensions', is the fix
        return f"output_type {output_type!r} cannot be used: {first}"
    reason = first.split(" Set `", 1)[0].rstrip(".")
    return (f"output_type {output_type!r} cannot be used ({reason}): give a pydantic model, a "
            "TypedDict or a dataclass whose fields are JSON types (str, int, float, bool, None, "
            "lists and dicts of them, or other such models), or one of those types alone")


def _inner_schema(adapter: pydantic.TypeAdapter[Any]) -> dict[str, Any]:
    """The schema of a non-object type, cleaned (titles dropped, references inlined)."""
    cleaned = clean_schema({"type": "object", "properties": {"v": adapter.json_schema()},
                            **_defs(adapter.json_schema())})
    inner: dict[str, Any] = cleaned["properties"]["v"]
    inner.pop("$defs", None)
    return inner


def _defs(schema: dict[str, Any]) -> dict[str, Any]:
    return {"$defs": schema["$defs"]} if schema.get("$defs") else {}


def describe_invalid(exc: Exception) -> str:
    """A validation failure as the model should read it: one line per problem."""
    if isinstance(exc, pydantic.ValidationError):
        lines = []
        for error in exc.errors()[:_MAX_ERRORS_SHOWN]:
            where = ".".join(str(part) for part in error["loc"]) or "(the value)"
            lines.append(f"- {where}: {error['msg']}")
        if exc.error_count() > _MAX_ERRORS_SHOWN:
            lines.append(f"- … and {exc.error_count() - _MAX_ERRORS_SHOWN} more")
        return "\n".join(lines)
    return f"- not valid JSON: {exc}"
