"""A user's review check has a name of its own: `review_off=[name]` and `review=[name]` pick
checks by name, so a name already in the table is refused when the agent is made."""

from __future__ import annotations

import pytest

from loopwright import Agent
from loopwright.errors import ConfigError
from loopwright.review import Check
from loopwright.review.table import active_checks, default_checks, with_user_checks


class MyDoomLoop(Check):
    name = "doom_loop"
    position = "last"


class StrictDates(Check):
    name = "strict_dates"
    position = "last"


class OtherStrictDates(Check):
    name = "strict_dates"
    position = "first"


def test_a_user_check_named_like_a_built_in_one_is_refused() -> None:
    """It was taken, and `review_off=["doom_loop"]` then turned off both without a word."""
    with pytest.raises(ConfigError, match=r"review check MyDoomLoop: the name 'doom_loop' is "
                       r"taken by a built-in check; give the class a `name` of its own"):
        Agent("m", review_checks=[MyDoomLoop()])


def test_two_user_checks_of_one_name_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"review check OtherStrictDates: the name "
                       r"'strict_dates' is taken by another of review_checks"):
        Agent("m", review_checks=[StrictDates(), OtherStrictDates()])


def test_user_checks_of_their_own_names_are_taken_and_turned_off_one_by_one() -> None:
    class LateDates(Check):
        name = "late_dates"
        position = "after:strict_dates"

    agent = Agent("m", review_checks=[StrictDates(), LateDates()], review_off=["strict_dates"])
    assert [type(c) for c in agent.settings.review_checks] == [StrictDates, LateDates]
    table = with_user_checks(default_checks(doom_loop_threshold=3, max_calls_per_reply=8,
                                            prompt_mode=False), agent.settings.review_checks)
    names = [c.name for c in active_checks(table, mode="all", off=["strict_dates"])]
    assert names[-1] == "late_dates" and "strict_dates" not in names and "doom_loop" in names
