"""The doom loop: one call made again and again, and the runaway replies of small models.

Counts, for each distinct call, the consecutive replies that make it again with the same
result, and keeps the result it last returned: a repeat counts only when the call and its result
are both what they were (a job polled while its status changes is progress, never a loop). A
call repeated alone in the next reply runs again (a poll may change);
one repeated with copies inside the same reply, or a reply that opens with the previous reply's
call and goes on with more, is the runaway of a small model (measured: the 0.5B model replays
`multiply(37, 43)` and then multiplies each result by 43 again), so it is not run: the model is
given the result it already has (`known`), the rest of a replayed reply is not run either
(`replayed`), except its first new call to an offered tool that does not feed the replayed
call's result back into it: that is the next step, and it runs. In the reply where the count
reaches `threshold` the call is intercepted with guidance; if the very next reply makes it once
more, the run stops — unless the call kept returning a result: then the next request asks for
an answer without tools, and only calling there stops the run. A reply asked to answer without
tools that makes a call never made before is progress: it runs."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from loopwright import notes
from loopwright.messages import ToolCall, call_signature
from loopwright.review.calls import copied_signatures
from loopwright.review.check import Check
from loopwright.review.fallback import preview
from loopwright.review.verdicts import Verdict, answer_without_tools, skip_call, stop
from loopwright.review.view import ReviewView
from loopwright.tools.corrections import corrected_call


@dataclass
class DoomLoopGuard:
    """The per-run counts behind `DoomLoop` (see the module docstring); `answer_again` reads
    them too (`last_outcome`, `streak`) rather than counting again."""

    threshold: int = 3
    _streaks: dict[str, int] = field(default_factory=dict)
    _results: dict[str, str] = field(default_factory=dict)
    _failed: set[str] = field(default_factory=set)  # signatures whose last result was an error
    # every call that ran in this run: whether its last run succeeded, and what it returned
    _outcomes: dict[str, tuple[bool, str]] = field(default_factory=dict)

    def check_reply(self, calls: Sequence[ToolCall], copied: Collection[str] = (),
                    tools: Collection[str] | None = None) -> dict[str, str]:
        """'ok', 'known', 'replayed', 'intercept' or 'stop' for each call id of one reply (its
        distinct calls); `copied` holds the signatures written more than once in this reply.
        In a replayed reply, the first new call to one of `tools` that is a next step runs."""
        streaks: dict[str, int] = {}
        verdicts: dict[str, str] = {}
        signatures = list(map(call_signature, calls))
        replay = len(calls) > 1 and signatures[0] in self._results
        candidate = replay  # only the first call after the replayed ones may be the next step
        for call, signature in zip(calls, signatures, strict=True):
            count = streaks[signature] = self._streaks.get(signature, 0) + 1
            if self.threshold > 0 and count >= self.threshold:
                verdicts[call.id] = "intercept" if count == self.threshold else "stop"
            elif count >= 2 and signature in self._results and (signature in copied or replay):
                verdicts[call.id] = "known"
            elif candidate and (tools is None or call.name in tools) and \
                    not self._feeds_back(call, calls[0]):
                verdicts[call.id] = "ok"
                candidate = False
            elif replay:
                candidate = False
                verdicts[call.id] = "replayed"
            else:
                verdicts[call.id] = "ok"
        self._streaks = streaks
        gone = self._results.keys() - streaks.keys()  # results of calls this reply did not make
        if gone:
            for signature in gone:
                del self._results[signature]
            self._failed -= gone
        return verdicts

    def remember(self, call: ToolCall, content: str, *, is_error: bool = False) -> None:
        """The result a call that really ran returned. A result other than the one the same
        call returned in the previous reply is progress (a job polled until its status
        changes): the count of repeats starts again from this reply."""
        signature = call_signature(call)
        previous = self._results.get(signature)
        if previous is not None and previous != content:
            self._streaks[signature] = 1
        self._results[signature] = content
        self._outcomes[signature] = (not is_error, content)
        if is_error:
            self._failed.add(signature)
        else:
            self._failed.discard(signature)

    def is_new(self, call: ToolCall) -> bool:
        """Whether no call with these arguments ran in this run."""
        return call_signature(call) not in self._outcomes

    def last_outcome(self, call: ToolCall) -> tuple[bool, str] | None:
        """Whether the last run of this call in this run succeeded, and what it returned; None
        when it never ran (a copy the review stage did not run leaves the outcome it had)."""
        return self._outcomes.get(call_signature(call))

    def streak(self, call: ToolCall) -> int:
        """How many replies in a row, up to the last one this guard counted, made the call."""
        return self._streaks.get(call_signature(call), 0)

    def answered(self, call: ToolCall) -> bool:
        """Whether the call's last run returned a result rather than an error."""
        signature = call_signature(call)
        return signature in self._results and signature not in self._failed

    def known_result(self, call: ToolCall) -> str:
        result = preview(self._results.get(call_signature(call)) or "")
        if not self.answered(call):  # the model must change the call, not answer with an error
            return notes.render(notes.KNOWN_FAILED, result=result, fix=self._example_fix(call))
        return notes.render(notes.KNOWN_RESULT, result=result)

    def _feeds_back(self, call: ToolCall, replayed: ToolCall) -> bool:
        """Whether `call` gives the replayed call's tool that call's own result (`multiply(1591,
        43)` after `multiply(37, 43) → 1591`): the runaway chain, not the request's next step
        (measured with the 0.5B model: `multiply(6, 7)` replayed, then `add(42, 100)` — the
        right next step — or `get_stock("pears")` after `get_stock("apples")`)."""
        result = (self._results.get(call_signature(replayed)) or "").strip()
        if call.name != replayed.name or not result or len(result) > 40:
            return call.name == replayed.name and bool(result)
        return re.search(rf"(?<![\w.-]){re.escape(result)}(?![\w.])", call.arguments) is not None

    @staticmethod
    def replayed_note(answered: bool, *, stepped: bool = False) -> str:
        if stepped:
            return notes.text(notes.REPLAY_STEPPED)
        then = ("Answer the user with the results you have." if answered else
                "Correct the call that failed, as its error says, or answer the user.")
        return notes.render(notes.REPLAYED, then=then)

    def guidance(self, call: ToolCall) -> str:
        count = self._streaks.get(call_signature(call), self.threshold)
        result = self._results.get(call_signature(call))
        last = f" Its last result was: {preview(result)}" if result is not None else ""
        then = (" Repeating it once more takes your tools away: you will have to answer."
                if self.answered(call) else
                f" Repeating it once more stops the run.{self._example_fix(call, sentence=True)}")
        return notes.render(notes.DOOM_LOOP, tool=repr(call.name), count=count, last=last,
                            then=then)

    def _example_fix(self, call: ToolCall, *, sentence: bool = False) -> str:
        """", for example {the call its error points to}" (or a sentence), or "" (tools/
        corrections.py: the 0.5B resent `get_stock("apple")` to "known items: apples, …")."""
        fixed = corrected_call(call, self._results.get(call_signature(call)) or "")
        if fixed is None:
            return ""
        return f" The error points to this call: {fixed}" if sentence else f", for example {fixed}"


class DoomLoop(Check):
    """The doom-loop check (module docstring): structural, it reads no prose."""

    name = "doom_loop"
    stage = "calls"

    def __init__(self, threshold: int) -> None:
        self.guard = DoomLoopGuard(threshold)

    def for_run(self) -> Check:
        return DoomLoop(self.guard.threshold)

    def ran(self, call: ToolCall, content: str, *, is_error: bool) -> None:
        self.guard.remember(call, content, is_error=is_error)

    async def review(self, view: ReviewView) -> list[Verdict]:
        guard = self.guard
        calls = list(view.calls)
        if not calls:  # an earlier check stopped them all
            return []
        if view.tools_off:  # asked to answer: a call never made before is progress, it runs
            if any(guard.is_new(c) for c in calls):
                return []
            note = notes.text(notes.NOT_RUN_ANSWER_ONLY)
            return [*(skip_call(c.id, note, f"{c.name}: called when asked to answer")
                      for c in calls),
                    stop("the model kept calling tools when asked to answer")]
        states = guard.check_reply(calls, copied_signatures(view.reply_calls), tools=view.tools)
        found = set(states.values())
        if found == {"ok"}:  # every call runs: nothing to skip, no answer to ask for
            return []
        out: list[Verdict] = []
        replay_note = (guard.replayed_note(guard.answered(calls[0]), stepped="ok" in found)
                       if "replayed" in found else "")
        repeated: list[ToolCall] = []  # warned, and made once more
        for call in calls:
            state = states.get(call.id, "ok")
            if state == "known":
                out.append(skip_call(call.id, guard.known_result(call),
                                     f"{call.name}: repeated; its earlier result given back"))
            elif state == "replayed":
                out.append(skip_call(call.id, replay_note,
                                     f"{call.name}: part of a replay of the previous reply"))
            elif state in ("intercept", "stop"):
                out.append(skip_call(call.id, guard.guidance(call),
                                     f"{call.name}: the same call {guard.threshold} replies in "
                                     "a row"))
                if state == "stop":
                    repeated.append(call)
        out.extend(self._next_step(view, calls, states, repeated))
        return out

    def _next_step(self, view: ReviewView, calls: list[ToolCall], states: dict[str, str],
                   repeated: list[ToolCall]) -> list[Verdict]:
        """Whether the next request answers without tools, or the run stops. Never when a new
        call ran in this reply: that is progress (a chain of reads, each after a replay)."""
        guard = self.guard
        # the last call of a cut reply is a fragment, not progress
        fresh = [c for c in calls if states.get(c.id) == "ok"
                 and not (view.truncated and c is calls[-1])]
        known = [c for c in calls if states.get(c.id) == "known"]
        if repeated:
            # a call that keeps returning its result gets one request to answer without
            # tools; one that keeps failing stops the run (asked to answer, the 0.5B invented
            # the weather the failing tool never gave)
            if all(guard.answered(c) for c in repeated):
                return [answer_without_tools("the same call was repeated after a warning")]
            return [stop("the same tool call was repeated after a warning")]
        if not fresh and known and all(guard.answered(c) for c in known):
            # a runaway (copies, or a replay) and nothing new ran: the model has what it asked
            # for (unless what it repeated had failed: then it must change the call, with tools)
            return [answer_without_tools("a runaway reply: nothing new was asked for")]
        return []
