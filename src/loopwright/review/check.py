"""A check of the review stage: a name, the stage it reviews, whether it reads prose, and one
method that returns verdicts. Users subclass it and pass instances as `review_checks`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal

from loopwright.messages import ToolCall
from loopwright.review.verdicts import Verdict
from loopwright.review.view import ReviewView

Stage = Literal["calls", "answer"]


class Check:
    """Override `review`. `stage`: "answer" (a final text) or "calls" (the calls of a reply,
    before they run). `reads_prose`: the check reads the model's words or guesses its intent;
    it is opt-in (`review = "all"`, or named in the `review` list), never run under
    `review = "auto"` (docs/settings.md). `small_models_only`: a structural check written for
    small local models; under "auto" it runs only for a model whose profile says so
    (`Profile.small_local`: Qwen, Llama, … — never a frontier family, nor an unknown name).
    `opt_in`: a structural check not yet shown to help out of sample: it runs only when named
    (or under "all"). `position` places a user check in the table: "first", "last" (the
    default), "before:NAME" or "after:NAME". A check with state for one run returns a fresh
    object from `for_run`; one that reads another check's state finds it in `joined`."""

    name: ClassVar[str] = "check"
    stage: ClassVar[Stage] = "answer"
    reads_prose: ClassVar[bool] = False
    small_models_only: ClassVar[bool] = False
    opt_in: ClassVar[bool] = False
    position: str = "last"

    def for_run(self) -> Check:
        return self

    def joined(self, checks: Sequence[Check]) -> None:
        """Called once a run, after every check's `for_run`, with the run's checks in table
        order: a check that reads another one's state (rather than keeping a copy of it) finds
        that check here."""

    async def review(self, view: ReviewView) -> Verdict | Sequence[Verdict] | None:
        """The verdicts on this reply; None (or `ACCEPT`) to let it pass."""
        return None

    def ran(self, call: ToolCall, content: str, *, is_error: bool) -> None:
        """A call of a reply this check reviewed really ran and returned `content`."""
