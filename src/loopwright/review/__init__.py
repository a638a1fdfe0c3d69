"""The review stage: every check of a reply, its calls and their arguments, as named checks in
one ordered table (`table.py`). A check reads a narrow view (`ReviewView`) and returns typed
verdicts (`Verdict`); the loop applies them in one place, charges them to one per-run budget
(`review_budget`) and emits one `review` event for each verdict other than accept.

Users add checks: subclass `Check`, set `name`, `stage` and `position`, and pass instances as
`Agent(review_checks=[...])`."""

from loopwright.notes import FALLBACK_HEAD, RUNTIME_MARK
from loopwright.review.check import Check
from loopwright.review.verdicts import (
    ACCEPT,
    Verdict,
    answer_without_tools,
    send_back,
    set_aside,
    skip_call,
    stop,
)
from loopwright.review.view import ReviewView

__all__ = ["ACCEPT", "FALLBACK_HEAD", "RUNTIME_MARK", "Check", "ReviewView", "Verdict",
           "answer_without_tools", "send_back", "set_aside", "skip_call", "stop"]
