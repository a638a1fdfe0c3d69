"""The one registry of every note the runtime writes to the model.

A note is registered once, by name, as a template (`{field}` for what changes from call to call).
`render` fills one in; `echoes_runtime_note` is derived from the registry: a reply repeats a note
when it holds one of the fixed stretches of a registered template, so a note added here is caught
as an echo without a second list to keep. Trajectories (`batch/trajectories.py`) use `is_note` to
mark the runtime's notes in a conversation."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

from loopwright.interrupted import INTERRUPTED as INTERRUPTED_HEAD
from loopwright.interrupted import INTERRUPTED_RESULT
from loopwright.messages import Message

RUNTIME_MARK = "[runtime note]"
FALLBACK_HEAD = "[no answer from the model]"
_MIN_FRAGMENT = 24  # shorter fixed stretches ("Not run: ", " times") are ordinary words
_FINGERPRINT = 40  # the start of a stretch is enough: a small model breaks off mid-sentence
_CLAUSE = re.compile(r"(?<=[.:;])\s+|\n")


@dataclass(frozen=True, kw_only=True, slots=True)
class Note:
    name: str
    template: str

    def fragments(self) -> tuple[str, ...]:
        """The template's fixed stretches long enough to say a text repeats this note."""
        parts = [literal for literal, *_ in string.Formatter().parse(self.template)]
        out = []
        for part in parts:  # a sentence or clause: a small model repeats pieces of a note
            for piece in _CLAUSE.split(part):
                text = _normal(piece)
                if len(text) >= _MIN_FRAGMENT:
                    out.append(text)
        return tuple(out)


NOTES: dict[str, Note] = {}


def register(name: str, template: str) -> str:
    """Register a note; returns its name (the key `render` takes)."""
    if name in NOTES and NOTES[name].template != template:
        raise ValueError(f"runtime note {name!r} registered twice with different texts")
    NOTES[name] = Note(name=name, template=template)
    _FRAGMENTS.clear()
    return name


def render(name: str, **values: object) -> str:
    """The text of note `name` with its fields filled in."""
    return NOTES[name].template.format(**values)


def text(name: str) -> str:
    """The text of a note without fields."""
    return NOTES[name].template


_FRAGMENTS: list[str] = []


def _fragments() -> list[str]:
    if not _FRAGMENTS:
        found = {RUNTIME_MARK.lower(), FALLBACK_HEAD.lower()}
        for note in NOTES.values():
            found.update(f[:_FINGERPRINT] for f in note.fragments())
        _FRAGMENTS.extend(sorted(found))
    return _FRAGMENTS


def echoes_runtime_note(reply: str) -> bool:
    """Whether `reply` repeats a note the runtime wrote (any registered one)."""
    lowered = _normal(reply)
    return any(fragment in lowered for fragment in _fragments())


def is_note(message_text: str) -> bool:
    """Whether a message's text starts like one of the runtime's notes."""
    lowered = _normal(message_text)
    return lowered.startswith(RUNTIME_MARK.lower()) or any(
        lowered.startswith(f) for f in _fragments())


def note_message(text: str) -> Message:
    """A user turn holding a note the runtime wrote (feedback on an answer, "continue")."""
    return Message(role="user", content=text, marks=frozenset({"runtime_note"}))


def mark_set_aside(message: Message) -> None:
    """Mark a reply the review stage set aside (left out of later requests)."""
    message.marks = message.marks | {"set_aside"}


def is_set_aside(message: Message) -> bool:
    return "set_aside" in message.marks


def is_runtime_note(message: Message) -> bool:
    """A user turn the runtime wrote: marked so, or (a session older than the mark) its text
    starts like a registered note."""
    return message.role == "user" and ("runtime_note" in message.marks
                                       or is_note(message.content))


_RESTATED_CHARS = 600  # of the user's request, in a note that restates it


def restated(request: str) -> str:
    """The user's request on one line, cut at 600 characters, for a note that restates it."""
    wanted = " ".join(request.split())
    return wanted if len(wanted) <= _RESTATED_CHARS else wanted[:_RESTATED_CHARS] + " …"


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


# --- the notes ----------------------------------------------------------------------------------
# Requests (user turns the runtime adds)
LAST_ROUND = register("last_round", (
    "This is your last round: do not call any more tools. Give your final answer now, based on "
    "what you have, and say briefly what remains undone, if anything."))
ANSWER_NOW = register("answer_now", (
    "Do not call any tool now. Using the tool results above, answer the user's request "
    "directly."))
# a small model asked to answer that called again, asked once more (review/doom_loop.py)
ANSWER_FROM_RESULT = register("answer_from_result", (
    "Tools are off now: do not write a tool call. You already called {tool}, and its result "
    "was: {result}\nThe user's request is: {request}\nAnswer it now, in plain words, from "
    "that result."))
ANSWER_AFTER_FAILURES = register("answer_after_failures", (
    "Tools are off now: do not write a tool call. You called {tool} with the same arguments "
    "{count} times and it failed: {error}\nThe user's request is: {request}\nAnswer it now, "
    "in plain words, from what you have, and say what could not be done."))
BUDGET_SUMMARY = register("budget_summary", (
    "The iteration budget for this task is exhausted. Do not call tools. Summarise the work "
    "done so far, what remains, and your best current answer."))
CONTINUE = register("continue", (
    "Your reply was cut off by the output-token limit. Continue exactly where you stopped, "
    "without repeating anything."))
EMPTY_REPLY = register("empty_reply", (
    "Your last reply was empty. Reply now: call one of the tools, or give your answer as text."))
# the same, restating the request (after tool results, told only the above, the 1.5B answered
# "I'm not sure what you're asking": bench dev2 split, docs/benchmarks.md)
EMPTY_REPLY_TO = register("empty_reply_to", (
    "Your last reply was empty. The user's request is: {request}\nReply now: call one of the "
    "tools, or give your answer as text."))
BUDGET_WARNING = register("budget_warning", (
    "[budget] {used} of {total} iterations used ({left} left). Start wrapping up: finish the "
    "most important remaining work and prepare your answer."))
# Results of calls that did not run
NOT_RUN_TURN_LIMIT = register("not_run_turn_limit",
                              f"{RUNTIME_MARK} Not run: the turn limit was reached.")
NOT_RUN_ANSWER_ONLY = register("not_run_answer_only",
                               f"{RUNTIME_MARK} Not run: this reply was asked to answer "
                               "without tools.")
DUPLICATE = register("duplicate", (
    f"{RUNTIME_MARK} Not run: duplicate of call {{first}} in this reply (same tool, same "
    "arguments); its result is the one above."))
OVER_LIMIT = register("over_limit", (
    f"{RUNTIME_MARK} Error: not run: this reply asked for {{count}} tool calls and at most "
    "{limit} calls run per reply. Ask again in your next reply for what you still need."))
KNOWN_FAILED = register("known_failed", (
    f"{RUNTIME_MARK} Not run: this exact call failed in your previous reply: {{result}}\n"
    "Do not repeat it: change the arguments as the error says{fix}, or answer the user."))
KNOWN_RESULT = register("known_result", (
    f"{RUNTIME_MARK} Not run: you already have the result of this exact call from your "
    "previous reply: {result}\nDo not call it again: answer the user with this result."))
REPLAY_STEPPED = register("replay_stepped", (
    f"{RUNTIME_MARK} Not run: this reply began by repeating a call from your previous reply; "
    "only its first new call ran. Use that result for the next step, or answer the user."))
REPLAYED = register("replayed", (
    f"{RUNTIME_MARK} Not run: this reply began by repeating a call from your previous reply "
    "and went on from there; none of it ran. {then}"))
DOOM_LOOP = register("doom_loop", (
    f"{RUNTIME_MARK} Error: you have called {{tool}} with the same arguments {{count}} times "
    "in a row; the result will not change, so it was not run again.{last}\nUse what you "
    "already have, try a different approach, or give your answer.{then}"))
# Feedback on an answer (the review stage's send-backs)
ECHO = register("echo", (
    "Your reply repeated a runtime note instead of answering. Answer the user's request in "
    "your own words, using the tool results above."))
DANGLING = register("dangling", (
    "Your reply stopped at a colon, before the answer itself. Give the answer now, in words, "
    "using the tool results above."))
COPY = register("copy", (  # the copy is set aside (left out of later requests): stands alone
    "Your last reply was set aside: it repeated, word for word, the text of an earlier reply "
    "of yours that called tools. Their results are above: answer the user's request from them "
    "now, or call a tool if you still need one."))
IMITATION = register("imitation", (
    "Your reply imitated the runtime's markup (<tool_response> or <system-reminder>) instead "
    "of answering. Only the runtime writes tool results: call a tool if you still need one, or "
    "answer the user in plain words from the results you were given."))
# the reply is set aside: this stands without it, and names no tag (Qwen2.5-Coder-1.5B, given
# alice's id, wrote `<tool_response name="get_orders">` with invented orders three times while
# it stayed in view, under every wording; set aside and told only this, it made the call; told
# about the tags, it wrote one again)
MADE_UP_RESULT = register("made_up_result", (
    "Your last reply was set aside: only the runtime writes tool results. To get {tool}'s real "
    "result, call {tool} and end your reply there."))
UNREAD_FILE = register("unread_file", (
    "You have not read {files} yet: no tool has opened it in this conversation, so your answer "
    "was a guess and was set aside. Call {tool} on it now, for example {example}, then answer "
    "from its result."))
# no words of the reply are read: the note follows a tool error and a reply with no call
# (review/after_error.py) and restates the request. It offers no "or answer": offered "if no
# call can, give your final answer", the 1.5B answered "The last call failed because…" in 4 of
# the 5 dev2 runs it was sent back in (docs/benchmarks.md); the check fires once a run, so after
# a second failure the model's answer stands
AFTER_ERROR = register("after_error", (
    "Your reply made no tool call, so nothing ran after {tool} failed: {error}\nThe user's "
    "request is: {request}\nMake the corrected call now, as a real tool call, or call another "
    "tool that gets what is needed."))
NARRATION_TOOLS_OFF = register("narration_tools_off", (
    "Your reply announced a tool action, but this reply was asked to answer without tools. "
    "Give your final answer now, from the results above."))
NARRATION = register("narration", (
    "You said you would use a tool, but your reply contained no tool call, so nothing ran. If "
    "you need the tool, {how}; otherwise give your final answer."))
MAKE_THE_CALL = register("make_the_call", "Make the call now: {call}")
FORMAT_CORRECTION = register("format_correction", (
    "Your tool call could not be read ({problems}), so it was not run. Write each call exactly "
    "like this, with the arguments as one valid JSON object (double quotes, no trailing commas, "
    "no comments), one block per call:\n{hint}\nIf you do not need a tool, answer without "
    "<tool_call> blocks."))
FALLBACK = register("fallback", (
    f"{FALLBACK_HEAD} The run ended ({{reason}}) before the model wrote an answer{{rest}}"))
# the rubric grader's request for a revision (grading.py)
REVISION = register("revision", (
    "A reviewer checked your answer against the rubric and asked for a revision:\n\n"
    "{feedback}\n\nFix these points (use tools if you need to), then give your complete final "
    "answer again."))
# structured output that did not validate (output/plugin.py; `how`: call the final tool, or
# reply with only the JSON object)
OUTPUT_INVALID = register("output_invalid", (
    "Your final answer is not valid:\n{problems}\n{how}, matching this JSON schema exactly: "
    "{schema}"))
# Reminders (context/reminders.py) and results of calls that never finished
FILE_DELETED = register("file_deleted", "{path} was deleted after you read it.")
FILE_CHANGED = register("file_changed", (
    "{path} was modified after you last read it (by the user or another process); re-read it "
    "before relying on or editing it."))
MORE_FILES_CHANGED = register("more_files_changed",
                              "…and {count} more files you read have changed.")
QUIET_TODOS = register("quiet_todos", (
    "Your todo list has open items and has not changed for {turns} turns:\n{listed}\nCarry on "
    "with them, or update the list (mark finished items completed, drop ones that no longer "
    "apply). Do not mention this reminder to the user."))
CANCELLED_CALL = register("cancelled_call",
                          "Error: cancelled by the user before this call finished.")
# a resumed session's attachment whose file was changed, moved or removed since (store/read_back.py)
ATTACHMENT_GONE = register("attachment_gone", (
    "[attachment {file} is no longer available: it was changed or removed after it was attached]"))
INTERRUPTED = register("interrupted", INTERRUPTED_RESULT)  # its text lives in interrupted.py
# an interrupted file write whose effect was recorded (tools/effects.py): what the files show now
TOOK_EFFECT = register("interrupted_took_effect", (
    INTERRUPTED_HEAD + " It took effect: {paths} now hold(s) what it wrote, so do not make it "
    "again."))
NO_EFFECT = register("interrupted_no_effect", (
    INTERRUPTED_HEAD + " It did not take effect: {paths} is/are as before it; make it again if "
    "it is still needed."))
PART_EFFECT = register("interrupted_part_effect", (
    INTERRUPTED_HEAD + " It may have taken effect in part ({parts}); check the files before "
    "repeating it."))
