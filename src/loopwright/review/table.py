"""The ordered table of checks, and which of them run for a model (`review`, `review_off`).

Calls are reviewed before they run, in table order, each check seeing only the calls no earlier
check stopped; an answer is reviewed in table order until one check does not accept it. User
checks (`review_checks`) join the table at their declared `position`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from loopwright.errors import ConfigError
from loopwright.review.after_error import AfterError
from loopwright.review.answer_again import AnswerAgain
from loopwright.review.answers import CopiedPreamble, DanglingColon, EchoedNote, ImitatedMarkup
from loopwright.review.arguments import BadArguments, UnknownTool
from loopwright.review.call_after_error import CallAfterError
from loopwright.review.call_format import CallFormat
from loopwright.review.calls import CallLimit, DuplicateCalls
from loopwright.review.check import Check
from loopwright.review.doom_loop import DoomLoop
from loopwright.review.narration import Narration
from loopwright.review.unread_files import UnreadFile

ReviewMode = Literal["auto", "all", "off"] | list[str]


def default_checks(*, doom_loop_threshold: int, max_calls_per_reply: int,
                   prompt_mode: bool) -> list[Check]:
    """The built-in checks, in table order (`names.CHECK_NAMES`, why each sits where it does)."""
    return [DuplicateCalls(), CallLimit(max_calls_per_reply), AnswerAgain(),
            DoomLoop(doom_loop_threshold), UnknownTool(), BadArguments(),
            UnreadFile(), ImitatedMarkup(), EchoedNote(), CopiedPreamble(), DanglingColon(),
            CallFormat(), Narration(prompt_mode=prompt_mode), AfterError(), CallAfterError()]


def with_user_checks(table: Sequence[Check], user: Iterable[Check]) -> list[Check]:
    """`table` with each user check placed at its `position`. A check's name is its handle
    (`review`, `review_off`, `position`): one already in the table is refused, since
    `review_off=[name]` would turn both off."""
    out = list(table)
    for check in user:
        if not isinstance(check, Check):
            raise ConfigError(f"review_checks: {check!r} is not a loopwright.review.Check")
        where, _, name = check.position.partition(":")
        names = [c.name for c in out]
        if check.name in names:
            built_in = any(c.name == check.name for c in table)
            raise ConfigError(
                f"review check {type(check).__name__}: the name {check.name!r} is taken by "
                f"{'a built-in check' if built_in else 'another of review_checks'}; give the "
                "class a `name` of its own (`review` and `review_off` pick checks by name)")
        if where == "first":
            out.insert(0, check)
        elif where in ("before", "after") and name in names:
            out.insert(names.index(name) + (where == "after"), check)
        elif where == "last":
            out.append(check)
        else:
            raise ConfigError(f"review check {check.name!r}: position {check.position!r} is not "
                              "'first', 'last', 'before:NAME' or 'after:NAME' of a check in "
                              f"the table ({', '.join(names)})")
    return out


def active_checks(table: Sequence[Check], *, mode: ReviewMode, off: Iterable[str],
                  small_local: bool = False) -> list[Check]:
    """The checks that run: none for "off"; every one for "all"; for "auto", the structural ones
    (those that do not read prose), less those for small models only unless `small_local`. A
    list runs the checks it names; the name "auto" in it stands for the structural ones, so
    `["auto", "narration"]` adds one prose check on top of them. `off` removes checks by name
    in every mode.

    The prose checks are opt-in for every model: on the held-out split they did not help the
    small local models they were written for (docs/benchmarks.md, the ablation)."""
    known = {c.name for c in table}
    named = set(mode) - {"auto"} if isinstance(mode, list) else set()
    unknown = sorted((set(off) | named) - known)
    if unknown:
        raise ConfigError(f"review: no check named {', '.join(map(repr, unknown))} "
                          f"(checks: {', '.join(sorted(known))}; \"auto\" in a list stands for "
                          "the structural ones)")
    if mode == "off":
        return []
    if mode == "all":
        chosen = list(table)
    else:
        structural = mode == "auto" or "auto" in mode
        chosen = [c for c in table if c.name in named or (
            structural and not c.reads_prose and not c.opt_in
            and (small_local or not c.small_models_only))]
    skipped = set(off)
    return [c for c in chosen if c.name not in skipped]
