"""What a check decides about a reply: one typed verdict, applied by the loop in one place
(`loop._apply_review`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

VerdictKind = Literal["accept", "send_back", "set_aside", "skip_call", "answer_without_tools",
                      "stop"]
# the verdicts that cost one more model call: they count against the run's `review_budget`
# (as does a verdict marked `extra_call`)
COSTLY: frozenset[str] = frozenset({"send_back", "set_aside"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Verdict:
    """`accept`: nothing to do. `send_back`: the answer is not final, the model reads `note`.
    `set_aside`: the same, and the reply is left out of every later request (a small model shown
    its own mistake copies it). `skip_call`: call `call_id` does not run; its result is `note`.
    `answer_without_tools`: the next request asks for an answer with tools off (with `note`
    when given, else the runtime's own request for an answer). `stop`: the run
    ends (`loop_detected`). An answer takes `send_back` and `set_aside`; calls take the others
    (any other verdict is reported with `applied: false`). `check` is filled in by the stage;
    `reason` goes to the event. `extra_call`: the verdict makes a model call the run would not
    have made (an answer asked for once more instead of a stop): it is charged to the budget."""

    kind: VerdictKind
    note: str = ""
    reason: str = ""
    call_id: str | None = None
    check: str = ""
    extra_call: bool = False
    # `set_aside` only: no note; the next reply is begun with this text for the model (a call's
    # opening, `ReviewView.call_opening`)
    prefill: str = ""

    @property
    def costly(self) -> bool:
        return self.extra_call or self.kind in COSTLY


ACCEPT = Verdict(kind="accept")


def send_back(note: str, reason: str) -> Verdict:
    return Verdict(kind="send_back", note=note, reason=reason)


def set_aside(note: str, reason: str) -> Verdict:
    return Verdict(kind="set_aside", note=note, reason=reason)


def set_aside_for_call(opening: str, reason: str) -> Verdict:
    return Verdict(kind="set_aside", prefill=opening, reason=reason)


def skip_call(call_id: str, note: str, reason: str) -> Verdict:
    return Verdict(kind="skip_call", call_id=call_id, note=note, reason=reason)


def answer_without_tools(reason: str, *, note: str = "", extra_call: bool = False) -> Verdict:
    return Verdict(kind="answer_without_tools", reason=reason, note=note, extra_call=extra_call)


def stop(reason: str) -> Verdict:
    return Verdict(kind="stop", reason=reason)
