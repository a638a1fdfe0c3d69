"""A docstring that mixes styles describes every parameter it documents, and no section's text
becomes another parameter's description; prose that only looks like a section stays prose."""

from __future__ import annotations

from typing import Any

from loopwright import tool


def described(made: Any) -> dict[str, str | None]:
    """Each parameter's description as the model is shown it."""
    return {name: schema.get("description")
            for name, schema in made.parameters["properties"].items()}


def test_google_args_after_a_numpy_parameters_section_describe_their_parameters() -> None:
    """`Args:` was read as a NumPy parameter named "Args": `limit` and `offset` lost their
    descriptions."""
    @tool
    def search(query: str, limit: int = 10, offset: int = 0) -> str:
        """Search the index.

        Parameters
        ----------
        query : str
            What to look for.

        Args:
            limit: How many results.
            offset: Where to start.
        """
        return ""

    assert search.description == "Search the index."
    assert described(search) == {"query": "What to look for.", "limit": "How many results.",
                                 "offset": "Where to start."}


def test_sphinx_fields_after_a_numpy_section_describe_their_parameters() -> None:
    """Everything after the first NumPy title was NumPy: `:param limit:` was lost."""
    @tool
    def search(query: str, limit: int = 10) -> str:
        """Search.

        Parameters
        ----------
        query : str
            What.
        :param limit: How many.
        """
        return ""

    assert described(search) == {"query": "What.", "limit": "How many."}


def test_google_args_with_sphinx_fields_describe_every_parameter() -> None:
    @tool
    def search(query: str, limit: int, offset: int = 0) -> str:
        """Search the index.

        Args:
            query: What to look for.
            limit: How many
                results to give.
        :param offset: Where to start.
        :returns: the hits
        """
        return ""

    assert described(search) == {"query": "What to look for.",
                                 "limit": "How many results to give.",
                                 "offset": "Where to start."}


def test_a_note_section_does_not_overwrite_a_parameters_description() -> None:
    """`Warning:` was read as a parameter of the `Args:` section: its `query: …` line replaced
    query's description."""
    @tool
    def search(query: str) -> str:
        """Search.

        Args:
            query: What to look for.

        Warning:
            query: must not be empty, or the whole index is read.
        """
        return ""

    assert described(search) == {"query": "What to look for."}


def test_a_keyword_args_section_is_a_section_not_text_of_the_last_argument() -> None:
    """"Keyword Args:" was read as a line of `b`'s description."""
    @tool
    def plot(a: int, b: int, *, colour: str = "red") -> str:
        """Plot.

        Args:
            a: The first.
            b: The second.

        Keyword Args:
            colour: The line's colour.

        Returns:
            a: never a parameter's text.
        """
        return ""

    assert described(plot) == {"a": "The first.", "b": "The second.",
                               "colour": "The line's colour."}


def test_parameters_indented_by_two_keep_their_own_indented_lines() -> None:
    """A `key: value` line under a parameter indented by two was read as a parameter."""
    @tool
    def tag(query: str, limit: int = 1) -> str:
        """Tag.

        Args:
          query: Pairs such as
            key: value.
          limit (int, optional): How many.
        """
        return ""

    assert described(tag) == {"query": "Pairs such as key: value.", "limit": "How many."}


def test_prose_that_mentions_args_or_starts_with_a_colon_stays_in_the_description() -> None:
    """A line starting with ":" ended the description (read as a Sphinx field): the lines after
    it were lost; "Args:" alone before unindented prose swallowed that prose."""
    @tool
    def run(command: str) -> str:
        """Pass the Args: as given, and note: nothing else.

        Example: call it with a command.
        :-) works with any shell.
        Args:
        the list is passed through unchanged.
        """
        return ""

    assert run.description == (
        "Pass the Args: as given, and note: nothing else.\n\nExample: call it with a command."
        "\n:-) works with any shell.\nArgs:\nthe list is passed through unchanged.")
    assert described(run) == {"command": None}


def test_text_after_a_google_section_is_description_again() -> None:
    @tool
    def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: The page.

        Redirects are followed.
        """
        return ""

    assert fetch.description == "Fetch a page.\n\nRedirects are followed."
    assert described(fetch) == {"url": "The page."}


def test_google_arguments_written_at_the_margin_are_read() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add.

        Args:
        a: the first
        b: the second,
            added to the first.
        """
        return a + b

    assert add.description == "Add."
    assert described(add) == {"a": "the first", "b": "the second, added to the first."}


def test_a_google_type_with_parentheses_of_its_own_is_read() -> None:
    """`size (tuple(int, int)): …` was not read as a parameter: its text went to the one
    before it."""
    @tool
    def resize(path: str, size: tuple[int, int]) -> str:
        """Resize.

        Args:
            path (str): The image.
            size (tuple(int, int)): Width and height.
        """
        return ""

    assert described(resize) == {"path": "The image.", "size": "Width and height."}
