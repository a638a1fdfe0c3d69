"""Guards that keep a run healthy: the doom-loop detector, the per-reply call screen (copies,
limit), the shared iteration budget, and the texts the runtime writes to the model.

Every note the runtime writes where a tool result belongs starts with `RUNTIME_MARK`, so a small
model that echoes one back as its answer is caught (`echoes_runtime_note`) and re-prompted
instead of handing the user our own text; when a run still ends without an answer, the user gets
`fallback_answer` — the real tool results, labelled as such — never an empty string."""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from loopwright.config import DEFAULTS
from loopwright.messages import Message, ToolCall
from loopwright.tools.arguments import loads_bounded, small_json_object
from loopwright.tools.corrections import corrected_call

RUNTIME_MARK = "[runtime note]"
_RESULT_PREVIEW = 300  # characters of an earlier result quoted back to the model


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _RESULT_PREVIEW else text[:_RESULT_PREVIEW] + " …"


def call_signature(call: ToolCall) -> str:
    """Name plus canonical arguments, so `{"a":1,"b":2}` and `{"b": 2, "a": 1}` are one call."""
    try:
        canonical = json.dumps(loads_bounded(call.arguments or "{}"), sort_keys=True)
    except ValueError:
        canonical = call.arguments.strip()
    return f"{call.name}\x00{canonical}"


@dataclass
class DoomLoopGuard:
    """Counts, for each distinct call, the consecutive replies that make it again, and keeps the
    result it last returned. A call repeated alone in the next reply runs again (a poll may
    change); one repeated with copies inside the same reply, or a reply that opens with the
    previous reply's call and goes on with more, is the runaway of a small model (measured: the
    0.5B model replays `multiply(37, 43)` and then multiplies each result by 43 again), so it is
    not run: the model is given the result it already has (`known`), the rest of a replayed
    reply is not run either (`replayed`). In the reply where the count reaches `threshold` the
    call is intercepted with guidance; if the very next reply makes it once more, the run
    stops — unless the call kept returning a result: then the next request asks for an answer
    without tools, and only calling there stops the run. Copies within one reply count once
    (see `screen_reply`), so the run never stops before the model has read the warning."""

    threshold: int = 3
    _streaks: dict[str, int] = field(default_factory=dict)
    _results: dict[str, str] = field(default_factory=dict)
    _failed: set[str] = field(default_factory=set)  # signatures whose last result was an error

    def check_reply(self, calls: Sequence[ToolCall], copied: Collection[str] = (),
                    tools: Collection[str] | None = None) -> dict[str, str]:
        """'ok', 'known', 'replayed', 'intercept' or 'stop' for each call id of one reply (its
        distinct calls); `copied` holds the signatures written more than once in this reply.
        In a replayed reply, the first new call to one of `tools` that is a next step runs."""
        streaks: dict[str, int] = {}
        verdicts: dict[str, str] = {}
        signatures = [call_signature(call) for call in calls]
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
        self._results = {k: v for k, v in self._results.items() if k in streaks}
        self._failed &= self._results.keys()
        return verdicts

    def remember(self, call: ToolCall, content: str, *, is_error: bool = False) -> None:
        """The result a call that really ran returned."""
        signature = call_signature(call)
        self._results[signature] = content
        if is_error:
            self._failed.add(signature)
        else:
            self._failed.discard(signature)

    def answered(self, call: ToolCall) -> bool:
        """Whether the call's last run returned a result rather than an error."""
        signature = call_signature(call)
        return signature in self._results and signature not in self._failed

    def known_result(self, call: ToolCall) -> str:
        result = _preview(self._results.get(call_signature(call)) or "")
        if not self.answered(call):  # the model must change the call, not answer with an error
            return (f"{RUNTIME_MARK} Not run: this exact call failed in your previous reply: "
                    f"{result}\nDo not repeat it: change the arguments as the error says"
                    f"{self._example_fix(call)}, or answer the user.")
        return (f"{RUNTIME_MARK} Not run: you already have the result of this exact call from "
                f"your previous reply: {result}\nDo not call it again: answer the user with "
                "this result.")

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
            return (f"{RUNTIME_MARK} Not run: this reply began by repeating a call from your "
                    "previous reply; only its first new call ran. Use that result for the next "
                    "step, or answer the user.")
        then = ("Answer the user with the results you have." if answered else
                "Correct the call that failed, as its error says, or answer the user.")
        return (f"{RUNTIME_MARK} Not run: this reply began by repeating a call from your "
                f"previous reply and went on from there; none of it ran. {then}")

    def guidance(self, call: ToolCall) -> str:
        count = self._streaks.get(call_signature(call), self.threshold)
        result = self._results.get(call_signature(call))
        last = f" Its last result was: {_preview(result)}" if result is not None else ""
        return (
            f"{RUNTIME_MARK} Error: you have called {call.name!r} with the same arguments "
            f"{count} times in a row; the result will not change, so it was not run again.{last}"
            "\nUse what you already have, try a different approach, or give your answer."
            + (" Repeating it once more takes your tools away: you will have to answer."
               if self.answered(call) else
               f" Repeating it once more stops the run.{self._example_fix(call, sentence=True)}")
        )

    def _example_fix(self, call: ToolCall, *, sentence: bool = False) -> str:
        """", for example {the call its error points to}" (or a sentence), or "" (tools/
        corrections.py: the 0.5B resent `get_stock("apple")` to "known items: apples, …")."""
        fixed = corrected_call(call, self._results.get(call_signature(call)) or "")
        if fixed is None:
            return ""
        return f" The error points to this call: {fixed}" if sentence else f", for example {fixed}"


@dataclass(kw_only=True)
class ReplyScreen:
    """Calls of one reply that will not run, by call id, with the result the model reads."""

    duplicates: dict[str, str] = field(default_factory=dict)
    over_limit: dict[str, str] = field(default_factory=dict)
    copied: set[str] = field(default_factory=set)  # signatures written more than once

    @property
    def blocked(self) -> dict[str, str]:
        return {**self.duplicates, **self.over_limit}


def screen_reply(calls: Sequence[ToolCall], *, limit: int) -> ReplyScreen:
    """Copies of an earlier identical call in the same reply run once (the copies are answered
    "duplicate of call N"); past `limit` distinct calls (0 = no limit) the rest are not run."""
    screen = ReplyScreen()
    first_of: dict[str, int] = {}
    distinct = 0
    for n, call in enumerate(calls, 1):
        signature = call_signature(call)
        first = first_of.get(signature)
        if first is not None:
            screen.copied.add(signature)
            screen.duplicates[call.id] = (
                f"{RUNTIME_MARK} Not run: duplicate of call {first} in this reply (same tool, "
                "same arguments); its result is the one above.")
            continue
        first_of[signature] = n
        distinct += 1
        if 0 < limit < distinct:
            screen.over_limit[call.id] = (
                f"{RUNTIME_MARK} Error: not run: this reply asked for {len(calls)} tool calls "
                f"and at most {limit} calls run per reply. Ask again in your next reply for what "
                "you still need.")
    return screen


@dataclass
class IterationBudget:
    """Model calls a run may make, shared by the run and every sub-agent it starts."""

    total: int = DEFAULTS.iteration_budget
    used: int = 0
    warn_at: float = 0.7
    _warned: set[str] = field(default_factory=set, repr=False)  # runs already warned
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def consume(self, n: int = 1) -> bool:
        """Take `n` iterations; False when none were left."""
        with self._lock:
            if self.used >= self.total:
                return False
            self.used += n
            return True

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.used)

    def take_warning(self, run_id: str = "") -> str | None:
        """A note, once per run sharing the budget (a parent and each sub-agent), once `warn_at`
        of the budget is spent."""
        with self._lock:
            if run_id in self._warned or self.used < self.total * self.warn_at:
                return None
            self._warned.add(run_id)
        return (
            f"[budget] {self.used} of {self.total} iterations used ({self.remaining} left). "
            "Start wrapping up: finish the most important remaining work and prepare your answer."
        )


LAST_ROUND_NOTE = (
    "This is your last round: do not call any more tools. Give your final answer now, based on "
    "what you have, and say briefly what remains undone, if anything."
)
BUDGET_SUMMARY_NOTE = (
    "The iteration budget for this task is exhausted. Do not call tools. Summarise the work done "
    "so far, what remains, and your best current answer."
)
CONTINUE_NOTE = (
    "Your reply was cut off by the output-token limit. Continue exactly where you stopped, "
    "without repeating anything."
)
ANSWER_NOW_NOTE = (
    "Do not call any tool now. Using the tool results above, answer the user's request directly."
)
NOT_RUN_TURN_LIMIT = f"{RUNTIME_MARK} Not run: the turn limit was reached."
NOT_RUN_ANSWER_ONLY = f"{RUNTIME_MARK} Not run: this reply was asked to answer without tools."
EMPTY_REPLY_NUDGE = ("Your last reply was empty. Reply now: call one of the tools, or give your "
                     "answer as text.")
ECHO_FEEDBACK = (
    "Your reply repeated a runtime note instead of answering. Answer the user's request in your "
    "own words, using the tool results above."
)
DANGLING_FEEDBACK = (
    "Your reply stopped at a colon, before the answer itself. Give the answer now, in words, "
    "using the tool results above."
)
COPY_FEEDBACK = (  # the copy is set aside (left out of later requests): this stands without it
    "Your last reply was set aside: it repeated, word for word, the text of an earlier reply "
    "of yours that called tools. Their results are above: answer the user's request from them "
    "now, or call a tool if you still need one."
)
UNREAD_NOTE_MARK = "no tool has opened it in this conversation"  # the unread-file note's words
FALLBACK_HEAD = "[no answer from the model]"
_FALLBACK_RESULTS = 4
_COPY_MIN_CHARS = 40  # a short answer given twice ("42") is an answer, not a copied preamble
_ECHO_FINGERPRINTS = (RUNTIME_MARK.lower(), "runtime note]", "not run: duplicate of call",
                      "do not call any more tools", "do not call any tool now",
                      "the user's latest message is",  # the 0.5B, asked to answer: no answer
                      "times in a row; the result will not change", FALLBACK_HEAD.lower(),
                      ANSWER_NOW_NOTE[:40].lower(), LAST_ROUND_NOTE[:40].lower(),
                      "call one of the tools, or give your answer",  # EMPTY_REPLY_NUDGE's tail
                      UNREAD_NOTE_MARK,
                      "<tool_response", "<system-reminder")


def echoes_runtime_note(text: str) -> bool:
    """Whether `text` repeats one of the notes the runtime wrote to the model."""
    lowered = text.lower()
    return any(f in lowered for f in _ECHO_FINGERPRINTS)


def is_answer(text: str) -> bool:
    """Whether a final text can be shown as the model's answer: not empty, not a bare fragment
    of punctuation or of a cut call (`{"`, `{"name`), not an echo of the runtime's own notes."""
    from loopwright.tools.text_calls.registry import is_call_fragment  # only once a run ends

    return (any(ch.isalnum() for ch in text) and not echoes_runtime_note(text)
            and not is_call_fragment(text) and not is_dangling(text))


def copies_call_preamble(answer: str, history: Sequence[Message]) -> bool:
    """Whether `answer` is word for word the text of an earlier reply that called tools — the
    preamble of those calls, not an answer to their results (Qwen2.5-Coder-1.5B, prompt mode,
    given package.json by read_file, wrote again the prose of the reply that had asked for it).
    The answer's own message, last in `history`, is not compared with itself. An answer that
    is one of those calls' arguments is a copy too, however short (the 0.5B, given notes.txt by
    `{"path": "notes.txt"}`, answered `{"path": "notes.txt"}`)."""
    wanted = " ".join(answer.split())
    copied = small_json_object(wanted) or None  # `{}` is no copy
    if len(wanted) < _COPY_MIN_CHARS and copied is None:
        return False
    calls = [m for m in history[:-1] if m.role == "assistant" and m.tool_calls]
    if any(" ".join(m.content.split()) == wanted for m in calls):
        return True
    if copied is None or any(m.role == "tool" and small_json_object(m.content) == copied
                             for m in history):
        return False  # a tool returned that object: it may well be the answer
    return any(small_json_object(c.arguments) == copied for m in calls for c in m.tool_calls)



def is_dangling(text: str) -> bool:
    """A lead-in with nothing after it ("The result of this call would be:"): what followed was
    call markup, taken out of the visible text (0.5B model, asked to answer without tools)."""
    return text.rstrip().endswith(":")


def fallback_answer(history: Sequence[Message], reason: str) -> str:
    """What the user gets when a run ends without an answer from the model: the last results
    the tools really returned (never our own notes), labelled as such — not an invented answer;
    when no tool returned anything, that said in words (1.5B `missing_file`, prompt mode: three
    made-up `<tool_response>` blocks and no call left the output "")."""
    calls = {c.id: c for m in history if m.role == "assistant" for c in m.tool_calls}
    lines: list[str] = []
    for msg in reversed(history):
        if msg.role != "tool" or _not_run(msg):
            continue
        call = calls.get(msg.tool_call_id or "")
        name = call.name if call is not None else msg.name or "tool"
        arguments = _preview(call.arguments) if call is not None and call.arguments else "{}"
        line = f"- {name} {arguments} → {'error: ' if msg.is_error else ''}{_preview(msg.content)}"
        if line not in lines:
            lines.append(line)
        if len(lines) == _FALLBACK_RESULTS:
            break
    if not lines:
        return (f"{FALLBACK_HEAD} The run ended ({reason}) before the model wrote an answer, "
                "and no tool returned a result.")
    return (f"{FALLBACK_HEAD} The run ended ({reason}) before the model wrote an answer. The "
            "last tool results it received:\n" + "\n".join(reversed(lines)))


_NOT_RUN_FRAGMENTS = ("was cut off by the output-token limit before its arguments",)


def _not_run(result: Message) -> bool:
    return result.content.startswith(RUNTIME_MARK) or any(
        f in result.content for f in _NOT_RUN_FRAGMENTS)


def without_unrun_calls(history: Sequence[Message]) -> list[Message]:
    """The history as an answer-only request shows it: calls the runtime did not run (copies,
    repeats, cut fragments) and their notes left out, so a small model looking at its own runaway
    replies is not primed to write them once more. Only for that request; never stored."""
    unrun = {m.tool_call_id for m in history if m.role == "tool" and _not_run(m)}
    if not unrun:
        return list(history)
    out: list[Message] = []
    for msg in history:
        if msg.role == "tool" and msg.tool_call_id in unrun:
            continue
        if msg.role == "assistant" and msg.tool_calls:
            kept = [c for c in msg.tool_calls if c.id not in unrun]
            if not kept and not msg.content.strip():
                continue
            if len(kept) != len(msg.tool_calls):
                msg = dataclasses.replace(msg, tool_calls=kept)
        out.append(msg)
    return out
