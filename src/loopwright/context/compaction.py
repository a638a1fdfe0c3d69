"""Pruning, then compaction: keep every request inside the context window.

`CompactionPlugin.before_model` estimates the outgoing request (see `context/tokens.py`). Over the
preflight threshold (50 % of the window):

1. **Prune** (free, no model call): tool results older than the protected tail become short stubs
   (a stub keeps the spill-file path when there is one) and long string values in old tool-call
   arguments are shortened — re-encoded, so the arguments stay valid JSON.
2. **Compact**, only if still over: the turns between the original task and the protected tail are
   summarised by the model into a structured report, labelled reference only. If that call fails,
   a report built from the record stands in, and the summary model is not asked again for
   `summary_cooldown` seconds (default 300; one memory per agent, see `SummaryCooldown`).
   The new history is: system prompt, the original task (verbatim), the summary,
   the latest user message (verbatim, if it was not in the tail), the tail. The tail never begins
   on a tool result, so calls and results stay together. The run
   keeps its `session_id` (the id a user holds always means the newest state); every plugin's
   `on_compaction(run)` is told, and persistence starts the session's next epoch there.
   Compaction does not run again until the request has grown past the threshold again (by at
   least a tenth of the window when compaction could not get under it), and never on the next
   turn unless the hard limit is at stake.
   If the provider still rejects a request as too long, `on_context_overflow` takes the window it
   names (or less than the request) as the real one, shrinks the request, and the loop retries.
   A named window is kept for the agent's later runs; a guess, never below a plausible window,
   is the run's only.
3. Over the hard limit (85 %) even so: everything but the newest exchange is pruned, then the
   newest tool results are cut to fit, their full text spilled to files first.

`status` events: `pruned`, `compacting`, `compacted` (data: `session_id`, token counts,
`fallback`), `context_trimmed`, `context_over`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopwright import messages
from loopwright.arguments import loads_bounded
from loopwright.context.summary import (
    SUMMARY_SYSTEM,
    SummaryCooldown,
    fallback_summary,
    is_summary,
    render_transcript,
    summary_message,
    summary_prompt,
    summary_state,
)
from loopwright.context.tokens import (
    CHARS_PER_TOKEN,
    TokenCounter,
    estimate_message,
)
from loopwright.context.window import ContextBudget
from loopwright.endpoints.probe import sane, window_from_error
from loopwright.errors import ContextOverflowError, LoopwrightError
from loopwright.messages import Message, ModelRequest, ModelResponse
from loopwright.plugins import LoopPlugin
from loopwright.tools.output import SPILL_MARKER, bound_text, preview_overhead

if TYPE_CHECKING:
    from loopwright.plugins import RunView

PRUNE_MIN_CHARS = 400  # shorter results cost about as much as their stub
ARGUMENT_VALUE_CHARS = 300
REARM_SHARE = 0.10
SUMMARY_MARGIN_TOKENS = 256
MIN_RESULT_CHARS = 600
STUB_PREFIX = "[Output of "


# --- the protected tail and pruning -------------------------------------------------------------


def tail_start(history: Sequence[Message], tail_tokens: int) -> int:
    """Where the verbatim tail begins: the newest messages within `tail_tokens` (at least the
    newest one), moved back so that it never begins on a tool result."""
    start, total = len(history), 0
    while start > 1:
        cost = estimate_message(history[start - 1])
        if start < len(history) and total + cost > tail_tokens:
            break
        total += cost
        start -= 1
    while 1 < start < len(history) and history[start].role == "tool":
        start -= 1
    return start


def stub_for(message: Message) -> Message:
    """A short stand-in for an old tool result (keeps the spill path if the output had one)."""
    saved = ""
    at = message.content.find(SPILL_MARKER)
    if at >= 0:
        path = message.content[at + len(SPILL_MARKER):].split(" — ", 1)[0].split("\n", 1)[0]
        saved = f" The full output is still in {path.strip()}."
    text = (f"{STUB_PREFIX}{message.name or 'a tool'} pruned to save context: it was "
            f"{len(message.content):,} characters.{saved} Call the tool again if you need it.]")
    return Message(role="tool", content=text, tool_call_id=message.tool_call_id,
                   name=message.name, is_error=message.is_error)


def _shrink_value(value: Any, limit: int) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]}…[{len(value) - limit} characters pruned]"
    if isinstance(value, dict):
        return {k: _shrink_value(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_shrink_value(v, limit) for v in value]
    return value


def shrink_arguments(arguments: str, limit: int = ARGUMENT_VALUE_CHARS) -> str:
    """Old call arguments with long string values shortened; the result is always valid JSON."""
    if len(arguments) <= limit * 2:
        return arguments
    try:
        value = loads_bounded(arguments)
    except ValueError:
        return json.dumps({"pruned": f"{len(arguments)} characters of arguments (not valid JSON)"})
    return json.dumps(_shrink_value(value, limit), ensure_ascii=False)


def _pruned(message: Message) -> Message | None:
    if message.role == "tool":
        if len(message.content) > PRUNE_MIN_CHARS and not message.content.startswith(STUB_PREFIX):
            return stub_for(message)
        return None
    if message.role != "assistant" or not message.tool_calls:
        return None
    calls = [messages.ToolCall(id=c.id, name=c.name, arguments=shrink_arguments(c.arguments))
             for c in message.tool_calls]
    if all(a.arguments == b.arguments for a, b in zip(calls, message.tool_calls, strict=True)):
        return None
    return Message(role="assistant", content=message.content, tool_calls=calls,
                   reasoning=message.reasoning, provider_data=message.provider_data)


def prune(history: Sequence[Message], end: int) -> dict[int, Message]:
    """Replacements (by `id()` of the old message) for prunable messages before `end`."""
    out: dict[int, Message] = {}
    for message in history[1:end]:
        new = _pruned(message)
        if new is not None:
            out[id(message)] = new
    return out


def apply(run: RunView, request: ModelRequest, replacements: dict[int, Message]) -> None:
    """Swap messages in both the history and the outgoing request (same objects in both)."""
    if replacements:
        run.replace_history([replacements.get(id(m), m) for m in run.history])
        request.messages[:] = [replacements.get(id(m), m) for m in request.messages]


# --- the plugin ---------------------------------------------------------------------------------


class CompactionPlugin(LoopPlugin):
    """Keeps requests inside the window (see the module docstring). One instance per run."""

    def __init__(self, *, budget: ContextBudget, counter: TokenCounter | None = None,
                 spill_dir: Path | None = None, cooldown: SummaryCooldown | None = None) -> None:
        self.budget = budget
        self.cooldown = cooldown or SummaryCooldown()
        self.counter = counter or TokenCounter()
        self.spill_dir = spill_dir
        self.last_compacted_turn: int | None = None
        self.rearm_at = 0

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        raw: int | None = self.counter.estimate(request)
        tokens = self.counter.correct(raw or 0)
        if tokens > self.budget.threshold:
            tokens = await self._relieve(run, request, tokens)
            raw = None  # the request changed: estimate it again
        request.output_room = self.budget.output_room(tokens)
        self.counter.sent(request, raw)

    async def after_model(self, run: RunView, response: ModelResponse) -> None:
        self.counter.reported(response.usage.input_tokens)

    async def on_context_overflow(self, run: RunView, request: ModelRequest,
                                  error: ContextOverflowError) -> bool:
        """The provider said the request is too long: learn its window (from the error, else
        below this request's size), then prune and compact as if over the hard limit."""
        tokens = self.counter.count(request)
        named = window_from_error(f"{error} {error.body}")
        # unnamed, the window is somewhat below this request, if that is a plausible window
        learned = named if named is not None else sane(int(tokens * 0.8))
        smaller = False
        if learned is not None and learned < self.budget.window:
            smaller = True
            self.budget.learn(learned, "provider_error",
                              keep=named is not None and self.budget.told_by_own(error))
            run.status("context_window", f"the provider rejected ~{tokens:,} tokens; the window "
                       f"is now taken as {learned:,}", {"window": learned, "tokens": tokens})
        self.last_compacted_turn = None  # compaction must be allowed now
        after = await self._relieve(run, request, tokens)
        request.output_room = self.budget.output_room(after)
        self.counter.sent(request)
        # a request that fits the learned window was rejected for the reply's allowance
        # (input + max_tokens over it): sent again, with the allowance fitted
        return after < tokens or (smaller and after <= self.budget.hard_limit)

    async def _relieve(self, run: RunView, request: ModelRequest, tokens: int) -> int:
        budget = self.budget
        before = tokens
        replacements = prune(run.history, tail_start(run.history, budget.tail_tokens))
        if replacements:
            apply(run, request, replacements)
            tokens = self.counter.count(request)
            run.status("pruned", f"pruned {len(replacements)} old tool outputs and arguments "
                       f"(~{before:,} → ~{tokens:,} tokens)",
                       {"messages": len(replacements), "before_tokens": before,
                        "after_tokens": tokens, "window": budget.window})
        if tokens > budget.threshold and self._may_compact(run, tokens):
            tokens = await self.compact(run, request, tokens)
        if tokens > budget.hard_limit:
            tokens = await self._trim_newest(run, request, tokens)
        return tokens

    def _may_compact(self, run: RunView, tokens: int) -> bool:
        """Not again until the request has grown past the threshold again, and not on the very
        next turn unless the hard limit is at stake (a summary per turn would be all cost)."""
        if self.last_compacted_turn is None:
            return True
        if tokens <= self.rearm_at:
            return False
        return run.turn - self.last_compacted_turn > 1 or tokens > self.budget.hard_limit

    async def compact(self, run: RunView, request: ModelRequest, tokens: int) -> int:
        """Summarise the turns between the task and the tail; returns the new estimate."""
        history = run.history
        head = 1 if history and history[0].role == "system" else 0
        users = [i for i in range(head, len(history))
                 if history[i].role == "user" and not is_summary(history[i])]
        start = tail_start(history, self.budget.tail_tokens)
        if not users or start <= users[0] + 1:
            return tokens  # nothing between the task and the tail
        task_at, latest_at = users[0], users[-1]
        kept = {task_at} | ({latest_at} if latest_at < start else set())
        middle = [m for i, m in enumerate(history[head:start], head) if i not in kept]
        run.status("compacting", f"compacting {len(middle)} earlier messages (~{tokens:,} tokens, "
                   f"window {self.budget.window:,})", {"messages": len(middle),
                                                       "before_tokens": tokens})
        report, error = await self._summarize(run, history[task_at].content, middle)
        extras = request.messages[len(messages.sanitize(list(history))):]  # the last-round note
        summary = summary_message(report)
        latest = [history[latest_at]] if latest_at != task_at and latest_at < start else []
        run.replace_history([*history[:head], history[task_at], summary, *latest,
                             *history[start:]], compacted=True)
        request.messages[:] = [*messages.sanitize(list(run.history)), *extras]
        after = self.counter.count(request)
        self.last_compacted_turn = run.turn
        self.rearm_at = max(self.budget.threshold, after + int(self.budget.window * REARM_SHARE))
        run.status("compacted", f"compacted {len(middle)} messages into a summary "
                   f"(~{tokens:,} → ~{after:,} tokens){' [fallback summary]' if error else ''}",
                   {"session_id": run.session_id, "messages": len(middle),
                    "before_tokens": tokens, "after_tokens": after, "fallback": error is not None,
                    "error": error})
        return after

    async def _summarize(self, run: RunView, task: str, middle: list[Message]
                         ) -> tuple[str, str | None]:
        """(report, None) from the model, or (fallback report, why) when that failed."""
        previous = [m.content for m in middle if is_summary(m)]
        rest = [m for m in middle if not is_summary(m)]
        budget = self.budget
        room = budget.window - budget.summary_tokens - SUMMARY_MARGIN_TOKENS
        # the learned ratio turns our estimate into the provider's count; 0.85 is headroom for
        # the estimate's own error
        chars = int(room / max(self.counter.ratio, 1.0) * CHARS_PER_TOKEN * 0.85)
        previous = [p[: chars // 3] for p in previous[-1:]]
        fixed = len(SUMMARY_SYSTEM) + len(summary_prompt(task, previous, ""))
        prompt = summary_prompt(task, previous, render_transcript(rest, max(500, chars - fixed)))
        request = ModelRequest(model=run.model, max_tokens=budget.summary_tokens,
                               messages=[messages.system(SUMMARY_SYSTEM), messages.user(prompt)])
        read = summary_state(run.tool_state.get("read_files"))
        cooling = self.cooldown.cooling()
        if cooling is not None:
            return fallback_summary(task, middle, read_files=read, error=cooling), cooling
        try:
            response = await run.call_model(request, purpose="compaction")
        except LoopwrightError as exc:
            self.cooldown.failed(str(exc))
            return fallback_summary(task, middle, read_files=read, error=str(exc)), str(exc)
        self.cooldown.succeeded()
        text = response.message.content.strip()
        if not text:
            why = "the summary reply was empty"
            return fallback_summary(task, middle, read_files=read, error=why), why
        if response.finish_reason == "length":
            text += "\n(The summary was cut short by its length limit.)"
        return text, None

    async def _trim_newest(self, run: RunView, request: ModelRequest, tokens: int) -> int:
        """Last resort over the hard limit: prune all but the newest exchange, then cut the
        newest tool results to fit (full text spilled to files first)."""
        history = run.history
        newest = tail_start(history, 0)
        apply(run, request, prune(history, newest))
        tokens = self.counter.count(request)
        results = [m for m in history[newest:] if m.role == "tool"]
        if tokens > self.budget.hard_limit and results:
            spent = sum(estimate_message(m) for m in results)
            room = self.budget.hard_limit - (tokens - self.counter.correct(spent))
            per = max(MIN_RESULT_CHARS, int(room / self.counter.ratio * CHARS_PER_TOKEN)
                      // len(results))
            apply(run, request, await self._cut_results(results, per,
                                                          run.session_id or run.run_id))
            tokens = self.counter.count(request)
        if tokens > self.budget.hard_limit:
            run.status("context_over", f"the request is still ~{tokens:,} tokens, over "
                       f"{self.budget.hard_limit:,} of a {self.budget.window:,}-token window",
                       {"tokens": tokens, "window": self.budget.window})
        else:
            run.status("context_trimmed", f"cut the newest tool results to fit (~{tokens:,} "
                       "tokens)", {"tokens": tokens, "window": self.budget.window})
        return tokens

    async def _cut_results(self, results: list[Message], per: int,
                           scope: str) -> dict[int, Message]:
        """The results over `per` characters cut to a preview, spilled to the directory of
        `scope` (the run's session, as the output bounder's: `tools/output.spill_scope`)."""
        from loopwright.tools.output import spill_directory

        directory = self.spill_dir or spill_directory(None)
        out: dict[int, Message] = {}
        for message in results:
            if len(message.content) <= per:
                continue
            # the preview's header (its spill path in it) and omission line come on top of its text
            label = message.name or "tool"
            text, _ = await asyncio.to_thread(
                bound_text, message.content, per, directory, label=label, scope=scope,
                preview_chars=max(200, per - preview_overhead(directory, label)))
            out[id(message)] = Message(role="tool", content=text, name=message.name,
                                       tool_call_id=message.tool_call_id,
                                       is_error=message.is_error)
        return out
