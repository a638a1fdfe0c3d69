"""Rubric self-grading: before a run finishes, a separate grader call judges the answer.

`Agent(rubric="...")` (or `--rubric TEXT|@file` on the CLI) adds `RubricGrader`. When the model
would finish, the grader (same provider chain, no tools, not streamed) reads a condensed transcript,
the rubric and the answer, and replies `{"verdict": "satisfied|needs_revision|failed",
"feedback": "..."}`:

- `satisfied` → the run completes;
- `needs_revision` → the feedback goes back to the model as a user message and the loop goes on,
  at most `max_rubric_rounds` times (then the run completes with that verdict recorded);
- `failed` → the run completes, with the verdict recorded.

The grade lands on `RunResult.grade`: `{"verdict", "feedback", "rounds", "revisions", "graded"}`.
The grader fails open: an HTTP error or an unparsable reply never traps a run; the answer stands
and the grade says `graded: False` (never a pass). Grading is reported through `status` events of
kind `grading`; the grader's own text never reaches the user's stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright import messages, notes
from loopwright.arguments import ArgumentsError, parse_arguments
from loopwright.errors import ConfigError, RunCancelled
from loopwright.messages import Message, ModelRequest
from loopwright.plugins import LoopPlugin, RunView

if TYPE_CHECKING:
    from loopwright.result import RunResult

VERDICTS = ("satisfied", "needs_revision", "failed")
_ALIASES = {
    "satisfied": "satisfied", "pass": "satisfied", "passed": "satisfied", "ok": "satisfied",
    "needs_revision": "needs_revision", "needs revision": "needs_revision",
    "needs-revision": "needs_revision", "revise": "needs_revision", "revision": "needs_revision",
    "failed": "failed", "fail": "failed", "failure": "failed",
}

GRADER_PROMPT = """\
You are a strict, fair reviewer. You judge whether an AI agent's final answer satisfies a rubric,
using the transcript of its work as evidence. Reply with one JSON object and nothing else:
{"verdict": "satisfied" | "needs_revision" | "failed", "feedback": "..."}

- satisfied: the answer meets every point of the rubric.
- needs_revision: the answer misses or gets wrong something the agent can still fix; the feedback
  says exactly what to change, point by point.
- failed: the task cannot be done as asked (impossible, blocked, out of scope); the feedback says
  why.

Judge only against the rubric; do not invent requirements."""


_TRANSCRIPT_LIMIT = 24_000
_ANSWER_LIMIT = 12_000


def load_rubric(value: str, *, base: Path | None = None) -> str:
    """The rubric text: `value` itself, or the contents of a file when it is `@path`."""
    if not value.startswith("@"):
        return value
    path = Path(value[1:]).expanduser()
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"rubric file {path} cannot be read: {exc}") from exc


@dataclass(kw_only=True)
class Grade:
    """The grading state of one run."""

    verdict: str | None = None
    feedback: str = ""
    rounds: int = 0  # grader calls made
    revisions: int = 0  # times the feedback was sent back to the model
    graded: bool = False
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict, "feedback": self.feedback,
                               "rounds": self.rounds, "revisions": self.revisions,
                               "graded": self.graded}
        if self.error:
            out["error"] = self.error
        return out


class GraderError(Exception):
    """The grader could not produce a verdict (provider failure, unparsable reply)."""


class RubricGrader(LoopPlugin):
    """Grades each would-be final answer against `rubric`; see the module docstring. One
    object per agent; each run is graded by its own `_GradedRun`."""

    def __init__(self, rubric: str, *, max_rounds: int = 2) -> None:
        self.rubric = rubric
        self.max_rounds = max(0, max_rounds)

    def for_run(self, run: RunView) -> LoopPlugin:
        return _GradedRun(self.rubric, self.max_rounds)


class _GradedRun(LoopPlugin):
    """The grading of one run."""

    def __init__(self, rubric: str, max_rounds: int) -> None:
        self.rubric = rubric
        self.max_rounds = max_rounds
        self.grade = Grade()

    async def on_answer(self, run: RunView, answer: str) -> str | None:
        grade = self.grade
        grade.rounds += 1
        run.status("grading", f"grading the answer against the rubric (round {grade.rounds})",
                   {"round": grade.rounds})
        try:
            verdict, feedback = await self._judge(run, answer)
        except GraderError as exc:
            grade.verdict, grade.feedback, grade.graded = None, "", False
            grade.error = str(exc)
            run.status("grading", f"the grader failed; the answer stands ungraded: {exc}",
                       {"round": grade.rounds, "graded": False, "error": str(exc)})
            return None
        grade.verdict, grade.feedback, grade.graded, grade.error = verdict, feedback, True, None
        revise = verdict == "needs_revision" and grade.revisions < self.max_rounds
        run.status("grading", f"verdict: {verdict}" + ("; asking for a revision" if revise else ""),
                   {"round": grade.rounds, "verdict": verdict, "feedback": feedback,
                    "graded": True})
        if not revise:
            return None
        grade.revisions += 1
        return notes.render(notes.REVISION, feedback=feedback or "(no details given)")

    async def on_run_end(self, run: RunView, result: RunResult) -> None:
        if self.grade.rounds == 0:
            self.grade.error = (f"the run ended ({result.stop_reason}) before an answer was "
                                "graded")
        result.grade = self.grade.to_dict()

    async def _judge(self, run: RunView, answer: str) -> tuple[str, str]:
        request = ModelRequest(
            model=run.model,
            messages=[messages.system(GRADER_PROMPT),
                      messages.user(grading_request(self.rubric, run.history, answer))],
            max_tokens=run.settings.max_tokens,
        )
        try:  # a side call: the grader's words never reach the user's text stream
            response = await run.call_model(request, purpose="grading")
        except RunCancelled:
            raise  # the run ends cancelled, not with the answer
        except Exception as exc:  # fail open: any grader failure leaves the answer ungraded
            raise GraderError(f"{type(exc).__name__}: {exc}") from exc
        return parse_verdict(response.message.content)


def parse_verdict(text: str) -> tuple[str, str]:
    """(verdict, feedback) from the grader's reply, leniently (fences, prose, Python dicts)."""
    try:
        data = parse_arguments(text).value
    except ArgumentsError as exc:
        raise GraderError(f"the grader's reply is not a JSON verdict: {text[:200]!r}") from exc
    raw = str(data.get("verdict", "")).strip().lower()
    verdict = _ALIASES.get(raw) or _ALIASES.get(raw.replace("_", " "))
    if verdict is None:
        raise GraderError(f"the grader gave no known verdict ({raw!r}; expected one of "
                          f"{', '.join(VERDICTS)})")
    feedback = data.get("feedback", "")
    return verdict, feedback if isinstance(feedback, str) else str(feedback)


def grading_request(rubric: str, history: Sequence[Message], answer: str) -> str:
    """The grader's user message: rubric, condensed transcript, final answer."""
    steps = history
    if steps and steps[-1].role == "assistant" and not steps[-1].tool_calls:
        steps = steps[:-1]  # the final answer is shown in full below
    return (f"## Rubric\n{rubric.strip()}\n\n"
            f"## Transcript (condensed)\n{condense_transcript(steps)}\n\n"
            f"## Final answer\n{_clip(answer, _ANSWER_LIMIT)}\n\n"
            "Grade the final answer against the rubric. Reply with the JSON object only.")


def condense_transcript(history: Sequence[Message], *, limit: int = _TRANSCRIPT_LIMIT) -> str:
    """The run as short lines (long contents clipped); the first request and the most recent steps
    are kept when it is still too long."""
    lines: list[str] = []
    for msg in history:
        if msg.role == "user":
            lines.append(f"USER: {_clip(msg.content, 2000)}")
        elif msg.role == "assistant":
            if msg.content:
                lines.append(f"ASSISTANT: {_clip(msg.content, 1500)}")
            lines.extend(f"TOOL CALL {c.name}({_clip(c.arguments, 300)})" for c in msg.tool_calls)
        elif msg.role == "tool":
            flag = " (error)" if msg.is_error else ""
            lines.append(f"TOOL RESULT {msg.name}{flag}: {_clip(msg.content, 600)}")
    text = "\n".join(lines)
    if len(text) <= limit or not lines:
        return text or "(no steps)"
    head = lines[0][: limit // 4]
    tail: list[str] = []
    size = len(head) + 40
    for line in reversed(lines[1:]):
        if size + len(line) + 1 > limit:
            break
        tail.append(line)
        size += len(line) + 1
    return "\n".join([head, "[... earlier steps omitted ...]", *reversed(tail)])


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]} [... {len(text) - limit + 40} characters cut]"
