"""Tool schemas: pydantic models, enums, Literal, Optional, nested models, defaults, per-parameter
descriptions, `$defs` inlining, and OpenAI strict mode."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pydantic
import pytest

from loopwright import tool
from loopwright.tools.schema import inline_refs, is_strict_compatible, strict_schema


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(pydantic.BaseModel):
    street: str
    city: str = "Paris"


class Person(pydantic.BaseModel):
    name: str
    address: Address
    previous: list[Address] = []


class TreeNode(pydantic.BaseModel):
    label: str
    children: list[TreeNode] = []


def test_enum_and_literal_become_enums() -> None:
    @tool
    def paint(color: Color, finish: Literal["matte", "gloss"] = "matte") -> str:
        """Paint."""
        return ""

    props = paint.parameters["properties"]
    assert props["color"] == {"enum": ["red", "blue"], "type": "string"}
    assert props["finish"] == {"default": "matte", "enum": ["matte", "gloss"], "type": "string"}
    assert paint.parameters["required"] == ["color"]


def test_optional_is_nullable_and_not_required() -> None:
    @tool
    def find(query: str, limit: int | None = None) -> str:
        """Find."""
        return ""

    limit = find.parameters["properties"]["limit"]
    assert limit["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert limit["default"] is None
    assert find.parameters["required"] == ["query"]


def test_nested_models_are_inlined_without_defs() -> None:
    @tool
    def register(person: Annotated[Person, "who to register"]) -> str:
        """Register."""
        return ""

    schema = register.parameters
    assert "$defs" not in schema and "$ref" not in str(schema)
    person = schema["properties"]["person"]
    assert person["description"] == "who to register"
    assert person["properties"]["address"]["properties"]["city"] == {"default": "Paris",
                                                                     "type": "string"}
    assert person["properties"]["previous"]["items"]["required"] == ["street"]
    assert "title" not in str(schema)


def test_recursive_models_keep_their_definition() -> None:
    @tool
    def draw(tree: TreeNode) -> str:
        """Draw."""
        return ""

    schema = draw.parameters
    assert schema["properties"]["tree"] == {"$ref": "#/$defs/TreeNode"}
    assert set(schema["$defs"]) == {"TreeNode"}
    assert schema["$defs"]["TreeNode"]["properties"]["children"]["items"] == {
        "$ref": "#/$defs/TreeNode"}
    assert "title" not in str(schema)


def test_inline_refs_keeps_sibling_keywords_and_leaves_plain_schemas_alone() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A", "description": "d"}},
              "$defs": {"A": {"type": "string", "description": "base"}}}
    assert inline_refs(schema) == {"type": "object",
                                   "properties": {"a": {"type": "string", "description": "d"}}}
    plain = {"type": "object", "properties": {}}
    assert inline_refs(plain) is plain
    draft7 = {"type": "object", "properties": {"b": {"$ref": "#/definitions/B"}},
              "definitions": {"B": {"type": "integer"}}}
    assert inline_refs(draft7) == {"type": "object", "properties": {"b": {"type": "integer"}}}


def test_descriptions_from_annotated_google_and_sphinx_docstrings() -> None:
    @tool
    def copy(src: Annotated[str, "file to copy"], dst: str, overwrite: bool = False) -> str:
        """Copy a file.

        Args:
            dst: where the copy goes,
                created if missing
            overwrite: replace an existing file
        """
        return ""

    @tool
    def move(src: str, dst: str) -> str:
        """Move a file.

        :param src: the source
        :param dst: the target
        """
        return ""

    props = copy.parameters["properties"]
    assert copy.description == "Copy a file."
    assert props["src"]["description"] == "file to copy"
    assert props["dst"]["description"] == "where the copy goes, created if missing"
    assert props["overwrite"] == {"default": False, "description": "replace an existing file",
                                  "type": "boolean"}
    assert move.description == "Move a file."
    assert move.parameters["properties"]["dst"]["description"] == "the target"


def test_null_for_an_optional_parameter_means_not_given() -> None:
    @tool
    def greet(name: str, greeting: str = "Hello", times: int | None = None) -> str:
        """Greet."""
        return ""

    assert greet.validate({"name": "Ann", "greeting": None, "times": None}) == {
        "name": "Ann", "greeting": "Hello", "times": None}
    with pytest.raises(pydantic.ValidationError):
        greet.validate({"name": None})


def test_strict_spec_closes_objects_and_makes_optionals_required_and_nullable() -> None:
    @tool
    def register(person: Person, color: Color = Color.RED, note: str | None = None,
                 tags: Annotated[list[str], pydantic.Field(max_length=3)] = []) -> str:  # noqa: B006
        """Register."""
        return ""

    spec = register.spec(strict=True)
    schema = spec.parameters
    assert spec.strict
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["person", "color", "note", "tags"]
    assert schema["properties"]["color"] == {"enum": ["red", "blue", None],
                                             "type": ["string", "null"]}
    assert schema["properties"]["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert "maxItems" not in schema["properties"]["tags"]
    person = schema["properties"]["person"]
    assert person["additionalProperties"] is False
    assert person["required"] == ["name", "address", "previous"]
    assert person["properties"]["address"]["required"] == ["street", "city"]
    assert "default" not in str(schema)
    # the normal schema is untouched, and the strict one is built once
    assert register.parameters["required"] == ["person"]
    assert register.spec(strict=True) is spec
    # a strict call passes null for what it leaves out; defaults apply
    assert register.validate({"person": {"name": "A", "address": {"street": "s", "city": "c"},
                                         "previous": []},
                              "color": None, "note": None, "tags": None})["color"] is Color.RED


def test_free_form_objects_fall_back_to_the_normal_schema() -> None:
    @tool
    def tally(counts: dict[str, int]) -> str:
        """Tally."""
        return ""

    assert not is_strict_compatible(tally.parameters)
    with pytest.raises(ValueError):
        strict_schema(tally.parameters)
    spec = tally.spec(strict=True)
    assert not spec.strict and spec.parameters == tally.parameters


def test_strict_schema_keeps_property_names_that_look_like_keywords() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {
        "pattern": {"type": "string", "pattern": "^a"}, "default": {"type": "integer"}}}
    strict = strict_schema(schema)
    assert set(strict["properties"]) == {"pattern", "default"}
    assert strict["properties"]["pattern"] == {"type": ["string", "null"]}


def test_a_numpy_style_docstring_gives_parameter_descriptions_and_only_the_summary() -> None:
    """Its `Parameters` section (a title underlined with dashes) was read as part of the
    description: the model got the whole docstring and no parameter description."""
    @tool
    def resize(path: str, width: int, height: int, *, keep_ratio: bool = True) -> str:
        """Resize an image in place.

        The file is overwritten.

        Parameters
        ----------
        path : str
            The image file,
            relative to the workspace.
        width, height : int
            The new size in pixels.
        keep_ratio : bool, optional
            Fit inside the size instead of stretching.

        Returns
        -------
        str
            What was done.
        """
        return ""

    props = resize.parameters["properties"]
    assert resize.description == "Resize an image in place.\n\nThe file is overwritten."
    assert props["path"]["description"] == "The image file, relative to the workspace."
    assert props["width"]["description"] == props["height"]["description"] == (
        "The new size in pixels.")
    assert props["keep_ratio"]["description"] == "Fit inside the size instead of stretching."


def test_a_line_of_dashes_under_a_sentence_is_not_a_numpy_section() -> None:
    @tool
    def note(text: str) -> str:
        """Keep a note.

        Separate notes with a rule, like this.
        ---

        Args:
            text: the note
        """
        return ""

    assert note.description == ("Keep a note.\n\nSeparate notes with a rule, like this.\n---")
    assert note.parameters["properties"]["text"]["description"] == "the note"
