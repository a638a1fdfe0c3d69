"""The registry of the runtime's notes: echo detection is derived from it, so every registered
note repeated as an answer is caught, and no answer is caught for one sentence a model once
wrote."""

from __future__ import annotations

import string

import pytest

from loopwright import notes


def filled(name: str) -> str:
    fields = {f for _, f, _, _ in string.Formatter().parse(notes.NOTES[name].template) if f}
    return notes.render(name, **{f: "x" for f in fields})


@pytest.mark.parametrize("name", sorted(n for n in notes.NOTES if notes.NOTES[n].fragments()))
def test_every_registered_note_repeated_as_an_answer_is_an_echo(name: str) -> None:
    assert notes.echoes_runtime_note(f"Sure. {filled(name)}")


def test_only_a_note_too_short_to_tell_has_no_fingerprint() -> None:
    assert [n for n in notes.NOTES if not notes.NOTES[n].fragments()] == ["make_the_call"]


@pytest.mark.parametrize("answer", [
    "The user's latest message is \"get_stock\".",  # a sentence the 0.5B once wrote: no rule
    "The result will not change if you run it again: it is deterministic.",
    "Using the results above, the total is 59.",
    "Do not call this function with a negative number.",
])
def test_an_answer_that_only_shares_words_with_a_note_is_not_an_echo(answer: str) -> None:
    assert not notes.echoes_runtime_note(answer)


def test_a_note_cannot_be_registered_twice_with_two_texts() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        notes.register("continue", "Something else.")
