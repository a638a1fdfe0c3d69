"""The agent loop. `drive()` reads top to bottom like the lifecycle below; each step is a call
into the module that owns it. docs/architecture.md §1 draws the same list.

The lifecycle of one run, with the plugin hooks in the order they are called. "List order" is the
order of `LoopSettings.plugins` (outermost first); "reverse" is inside-out, like middleware. The
numbers are written beside the code.

  run start
     1  for_run              list order: each plugin's object for this run (RunState())
     2  on_message           the opening user message; later every message as it is appended
     3  on_run_start         list order
  each turn (`turn()`)
     4  limits               cancelled? max_turns reached?
     5  budget               none left: one tool-less summary call (through 8-10), then stop
     6  steering             pending steering messages appended
     7  request              the tools offered this turn; the history sanitised, without the
                             replies set aside (`RunView.set_aside_answer`); last-round note
     8  before_model         list order: hooks, MCP, recall, compaction, reminders, tool format
                             (attachments' token costs measured first, in a worker thread)
     9  the model call       text_filter (list order) wraps the text stream; the call itself is
                             `model_call.ModelCalls` (retries, fallback, usage, cost, record); too
                             long: on_context_overflow (list order) until one shrinks it, sent once
                             more; rejected as malformed: the history rebuilt once
    10  after_model          reverse order
    11  store the reply      its call arguments as valid JSON (`{}` for a tool without any)
    12  no calls             refusal, auto-continue after a cut, or an answer (16)
    13  review the calls     the review stage's calls checks (copies in one reply, the per-reply
                             limit, the doom loop, unknown tools, bad arguments); verdicts
                             applied in `_apply_review`
    14  execute              tools/execute.py: gates, approval, sandbox, output bounds; a call
                             the checks prepared runs with the arguments they validated
    15  append results       each as soon as it (and every one before it) is in, the budget
                             warning on the last one; on_results (list order) at once: the
                             recorder makes them durable; then after_tools (list order): the
                             batch is complete (the turn's file diff)
  after an answer
    16  review the answer    the review stage's answer checks in table order (gated per model),
                             the first verdict applied in `_apply_review`; then on_answer,
                             reverse order, until one gives feedback (then another turn);
                             steering pending also means another turn
  run end
    17  on_run_end           list order, once the result is known; then one terminal event
  on_compaction (list order) is called from 8 or 9 whenever compaction replaced the history.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import typing
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from loopwright import messages, notes
from loopwright.context.tokens import measure_attachments
from loopwright.errors import (
    ContextOverflowError,
    LoopwrightError,
    ProviderError,
    RequestRejectedError,
    RunCancelled,
    RunStopped,
)
from loopwright.events import (
    ReasoningDelta,
    ReviewEvent,
    TextDelta,
    new_tool_call,
    new_tool_result,
    new_turn_end,
    new_turn_start,
    terminal_event,
)
from loopwright.messages import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    with_storable_arguments_async,
)
from loopwright.result import RunResult, StopReason
from loopwright.review.fallback import fallback_answer, is_answer, without_unrun_calls
from loopwright.review.verdicts import Verdict
from loopwright.review.view import ReviewView
from loopwright.run_state import Answer, Next, RunAgain, RunState, Stop
from loopwright.tools.execute import PreparedCall, ToolOutcome
from loopwright.tools.schema_echo import without_ignored_arguments
from loopwright.wire.stream import DeltaListener

logger = logging.getLogger("loopwright")
_AGAIN = RunAgain()  # no fields, frozen: one for every turn that asks for another


# --- the driver ---------------------------------------------------------------------------------


async def drive(run: RunState) -> RunResult:
    """Run turns until an answer or a stop; always end with exactly one terminal event."""
    run._loop = asyncio.get_running_loop()
    failure: Exception | None = None
    try:
        end = await _run_turns(run)
    except RunCancelled:
        end = Stop("cancelled")
    except RunStopped as exc:  # a named stop raised by a plugin (output_invalid, usage_limit)
        failure = exc
        end = Stop(typing.cast(StopReason, exc.reason), str(exc))
    except LoopwrightError as exc:
        failure = exc
        end = Stop("error", str(exc))
    except Exception as exc:  # a bug (an adapter meeting an unknown shape, a plugin) ends the
        failure = exc  # run like any error: never a task that dies with nobody told
        logger.debug("run %s failed unexpectedly", run.run_id, exc_info=exc)
        end = Stop("error", f"unexpected {type(exc).__name__}: {exc}")
    if isinstance(end, Answer):
        return await _finish(run, "completed", output=end.text)
    return await _finish(run, end.reason, error=end.error, output=end.output,
                         exception=failure)


async def _run_turns(run: RunState) -> Answer | Stop:
    if run._start_failure is not None:
        raise run._start_failure
    for plugin in run.plugins:  # 3
        await plugin.on_run_start(run)
    while True:
        step: Next | None = _check_limits(run)  # 4
        if step is None:
            run.turn += 1
            # unheard, a turn has no events to frame it: no coroutine of its own around it
            step = await (_turn_with_events(run) if run.listened else turn(run))
        if isinstance(step, RunAgain):
            continue
        if isinstance(step, Answer):
            if run.steering_pending:
                continue
            verdict = (await run.review.review_answer(_view(run, answer=step.text))  # 16
                       if run.review.reviews_answers else None)
            if verdict is not None and _apply_review(run, [verdict], answer=True).again:
                continue
            feedback = await _answer_feedback(run, step.text)
            if run.cancel_requested:  # cancelled while the answer was checked (e.g. graded)
                raise RunCancelled
            if feedback is not None:  # the runtime's note (a grader's, a validator's)
                run.append(notes.note_message(feedback))
                continue
        return step


async def _answer_feedback(run: RunState, answer: str) -> str | None:
    for plugin in reversed(run.plugins):  # 16: inside-out
        feedback = await plugin.on_answer(run, answer)
        if feedback is not None:
            return feedback
    return None


async def _turn_with_events(run: RunState) -> Next:
    """`turn()` between its `turn_start` and `turn_end` events (the usage and cost it added)."""
    run.emit(new_turn_start(turn=run.turn, agent=run.agent_tag))  # events.py: `maker`
    usage_before = run.usage.copy()
    cost_before = run.cost
    try:
        step = await turn(run)
    finally:
        cost_after = run.cost
        cost = None if cost_after is None or cost_before is None else cost_after - cost_before
        run.emit(new_turn_end(turn=run.turn, usage=run.usage.since(usage_before), cost=cost,
                         agent=run.agent_tag))
    return step


def _check_limits(run: RunState) -> Stop | None:
    if run.cancel_requested:
        raise RunCancelled
    if run.turn >= run.settings.max_turns:
        return Stop("max_turns", f"reached max_turns ({run.settings.max_turns})")
    return None


async def turn(run: RunState) -> Next:
    """One model call and the tools it asks for."""
    s = run.settings
    run.offered = s.tool_specs(run.turn) if s.tool_specs else []
    if not run.budget.consume():  # 5: the last call is a tool-less summary
        return await _budget_summary(run)
    _drain_steering(run)  # 6
    last_round = run.turn >= s.max_turns
    answer_only, run.answer_now = last_round or run.answer_now, False
    answer_note, run.answer_note = run.answer_note, ""
    request = ModelRequest(  # 7
        model=s.chain.model,
        messages=run.request_history(),
        tools=list(run.offered),  # the plugins may edit the request's list
        max_tokens=s.max_tokens,
        temperature=s.temperature,
        reasoning_effort=s.reasoning_effort,
        user_request=run.request,
    )
    if answer_only:  # tools switched off, not removed (Anthropic needs them for history)
        request.messages = without_unrun_calls(request.messages)
        note = notes.text(notes.LAST_ROUND if last_round else notes.ANSWER_NOW)
        request.messages.append(messages.user(answer_note if answer_note and not last_round
                                              else note))
        request.tool_choice = "none" if request.tools else None
    run.tools_off = answer_only
    if run.prefill:  # the reply begun for the model: the server continues it
        if not answer_only:
            request.prefill = run.prefill
        run.prefill = ""
    response = await _ask(run, request, purpose="turn")  # 8, 9, 10
    offered = run.offered if response.message.tool_calls else []
    if offered:
        response.message = without_ignored_arguments(response.message, offered)
    truncated = response.finish_reason == "length"
    calls = response.message.tool_calls  # as written: the executor explains what is wrong
    run.append(await with_storable_arguments_async(response.message, cut=truncated))  # 11
    if not calls:  # 12
        return _answer_or_continue(run, response)
    if last_round:
        _close_calls(run, calls, notes.text(notes.NOT_RUN_TURN_LIMIT))
        return Stop("max_turns", f"reached max_turns ({s.max_turns})")
    # each call prepared once: by the argument checks when they run, else by the executor
    prepared: dict[str, PreparedCall | ToolOutcome] = {}
    verdicts = await run.review.review_calls(_view(  # 13
        run, calls=calls, offered=offered, truncated=truncated,
        prepare=s.executor.preparer(prepared, truncated=truncated, request=run.request))) \
        if run.review.call_checks else []
    review = _apply_review(run, verdicts)
    await _execute(run, calls, review.skipped, prepared, truncated=truncated)  # 14, 15
    for plugin in run.hooks.after_tools:
        await plugin.after_tools(run)
    if review.stop is not None:
        return Stop("loop_detected", review.stop)
    return _AGAIN


async def _ask(run: RunState, request: ModelRequest, *, purpose: str) -> ModelResponse:
    """Steps 8-10: the plugins edit the request, the model answers (its text streamed through
    the plugins' filters), the plugins edit the reply."""
    # the plugins estimate the request synchronously: what reads a file for its estimate is
    # read now, off the loop (the history: the request's attachments are its objects); the
    # common case, none, is one scan at C speed without a coroutine
    if messages.any_attachments(run.history):
        await measure_attachments(run.history)
    for plugin in run.hooks.before_model:  # 8
        await plugin.before_model(run, request)
    response = await _call_model_fitting(run, request, purpose)  # 9
    run.reply_raw = response.message.content  # as written, before call markup is taken out
    for plugin in reversed(run.hooks.after_model):  # 10: inside-out
        await plugin.after_model(run, response)
    run.reply_unreadable = response.unreadable_calls
    return response


async def _call_model_fitting(run: RunState, request: ModelRequest, purpose: str
                              ) -> ModelResponse:
    """Call the model; if the provider says the request is over its window, let the plugins
    shrink it (compaction learns the real window) and try once more; if it says the request is
    malformed, repair the history once, or stop — never resend the same bytes."""
    try:
        return await _call_model(run, request, purpose)
    except ContextOverflowError as exc:
        for plugin in run.plugins:  # 9: on_context_overflow, until one shrinks it
            if await plugin.on_context_overflow(run, request, exc):
                return await _call_model(run, request, purpose)
        raise
    except RequestRejectedError as exc:
        if not _repair_rejected(run, request, exc):
            raise RequestRejectedError(f"the provider rejected the request itself as malformed "
                                       f"and there is nothing to repair: {exc}") from exc
    try:
        return await _call_model(run, request, purpose)
    except RequestRejectedError as exc:
        raise RequestRejectedError(f"the provider rejected the request itself as malformed, "
                                   f"again after repairing the history once: {exc}") from exc


def _repair_rejected(run: RunState, request: ModelRequest, exc: RequestRejectedError) -> bool:
    """Rebuild the request and the history from plain parts; False when that changes nothing."""
    repaired = messages.sanitize(messages.plain_history(request.messages))  # user turns merge
    if len(repaired) == len(request.messages) and all(
            a is b for a, b in zip(repaired, request.messages, strict=True)):
        return False
    run.merge_turns()
    request.messages = repaired
    run.replace_history(messages.plain_history(run.history))
    run.status("history_repaired", f"the provider rejected the request ({exc}); resending it "
               "once without provider blocks and with re-serialised call arguments",
               {"status": exc.status})
    return True


def _drain_steering(run: RunState) -> None:
    if not run.steering_pending:  # the common case, without taking the lock
        return
    for text in run.drain_steering():
        run.status("steering", f"steering message added: {text[:80]}", {"text": text})
        run.append(messages.user(text))


def _call_model(run: RunState, request: ModelRequest, purpose: str
                ) -> Coroutine[Any, Any, ModelResponse]:
    """The call, to be awaited (a plain function: no coroutine of its own around it)."""

    def on_text(delta: str) -> None:
        run.emit(TextDelta(text=delta, agent=run.agent_tag))

    def on_reasoning(delta: str) -> None:
        run.emit(ReasoningDelta(text=delta, agent=run.agent_tag))

    text_listener: DeltaListener = on_text
    for plugin in run.hooks.text_filter:  # 9: text_filter wraps in list order
        text_listener = plugin.text_filter(run, text_listener)
    watchers = run.hooks.on_tool_args

    def on_tool_args(name: str, delta: str) -> None:
        for plugin in watchers:
            plugin.on_tool_args(run, name, delta)

    return run.calls.call(request, purpose=purpose, on_text=text_listener,
                          on_reasoning=on_reasoning,
                          on_tool_args=on_tool_args if watchers else None)


def _answer_or_continue(run: RunState, response: ModelResponse) -> Next:
    text = response.message.content
    if not run.output_parts:  # a new answer begins
        run.answer_messages = []
    run.output_parts.append(text)
    if run.last_reply is not None:
        run.answer_messages.append(run.last_reply)
    if response.finish_reason == "content_filter":  # a refusal is an answer of its own kind
        answer = "".join(run.output_parts)
        run.output_parts.clear()
        run.status("refused", "the provider ended the reply as a refusal (content filter)")
        return Stop("refused", None, output=answer)
    if response.finish_reason == "length" and run.auto_continues < run.settings.max_auto_continues:
        run.auto_continues += 1
        run.status("auto_continue", "reply cut by the output-token limit; asking to continue",
                   {"continuation": run.auto_continues})
        note = notes.note_message(notes.text(notes.CONTINUE))
        run.append(note)
        run.answer_messages.append(note)
        return _AGAIN
    answer = "".join(run.output_parts)
    run.output_parts.clear()
    run.auto_continues = 0
    return Answer(answer)


@dataclasses.dataclass
class _Applied:
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)  # call id → its result
    stop: str | None = None
    again: bool = False  # the answer was sent back


def _apply_review(run: RunState, verdicts: list[Verdict], *, answer: bool = False) -> _Applied:
    """The one place verdicts take effect: each is charged to the run's review budget and
    told as one `review` event; a send-back the spent budget does not allow is not applied,
    nor is a verdict on calls given to an answer (`answer`: only send back / set aside)."""
    out = _Applied()
    for verdict in verdicts:
        fits = verdict.kind in ("send_back", "set_aside") if answer else (
            verdict.kind not in ("send_back", "set_aside"))
        applied = fits and run.review.spend(verdict)
        run.emit(ReviewEvent(check=verdict.check, verdict=verdict.kind, reason=verdict.reason,
                             budget_left=run.review.budget_left, call_id=verdict.call_id,
                             applied=applied, agent=run.agent_tag))
        if not applied:
            continue
        if verdict.kind == "skip_call" and verdict.call_id is not None:
            out.skipped.setdefault(verdict.call_id, verdict.note)
        elif verdict.kind == "answer_without_tools":
            run.answer_now, run.answer_note = True, verdict.note
        elif verdict.kind == "stop":
            out.stop = verdict.reason
        elif verdict.kind in ("send_back", "set_aside"):
            if verdict.kind == "set_aside":
                run.set_aside_answer()
            if verdict.prefill:  # no note: the next reply is begun as a call
                run.prefill = verdict.prefill
            else:
                run.append(notes.note_message(verdict.note))
            out.again = True
    return out


def _view(run: RunState, *, answer: str = "", calls: list[ToolCall] | None = None,
          offered: list[ToolSpec] | None = None, truncated: bool = False,
          prepare: Callable[[ToolCall], Awaitable[PreparedCall | ToolOutcome]] | None = None
          ) -> ReviewView:
    names, schemas = run.tool_schemas(run.offered if offered is None else offered)
    # the history itself, not a copy: the checks read it while the run awaits them
    return ReviewView(answer=answer, raw=run.reply_raw, calls=calls or (),
                      reply_calls=calls or (), tools=names, schema_of=schemas.get,
                      request=run.request, history=run.history,
                      workdir=run.settings.workdir,
                      turn=run.turn, max_turns=run.settings.max_turns, tools_off=run.tools_off,
                      truncated=truncated, unreadable=run.reply_unreadable,
                      budget_left=run.review.budget_left, call_opening=run.call_opening,
                      prepare=prepare)



async def _execute(run: RunState, calls: list[ToolCall], intercepted: dict[str, str],
                   prepared: dict[str, PreparedCall | ToolOutcome], *,
                   truncated: bool) -> list[ToolOutcome]:
    """Steps 14-15: run the batch; each result is appended (in call order) as soon as it and
    every result before it are in, and made durable before anything else happens."""
    tag = run.agent_tag
    results = _ResultsInOrder(run, calls)
    listened = run.listened

    def on_call(call: ToolCall, arguments: dict[str, Any] | str) -> None:
        run.emit(new_tool_call(id=call.id, name=call.name, arguments=arguments, agent=tag))

    async def on_outcome(outcome: ToolOutcome) -> None:
        if outcome.call.id not in intercepted:
            run.review.ran(outcome.call, outcome.content, is_error=outcome.is_error)
        if listened:
            run.emit(new_tool_result(id=outcome.call.id, name=outcome.call.name,
                                     content=outcome.content, is_error=outcome.is_error,
                                     duration=round(outcome.duration, 6), data=outcome.data,
                                     agent=tag))
        appended = results.add(outcome)
        if appended:
            for plugin in run.hooks.on_results:
                await plugin.on_results(run, appended)

    batch = run.settings.executor.run_batch(
        calls, run.tool_context, truncated=truncated, intercepted=intercepted, prepared=prepared,
        on_call=on_call if listened else None, on_outcome=on_outcome, request=run.request)
    try:
        outcomes: list[ToolOutcome] = await run.interruptible(batch)
    except asyncio.CancelledError:
        if run.cancel_requested:
            _close_calls(run, calls, notes.text(notes.CANCELLED_CALL))
            raise RunCancelled from None
        raise
    return outcomes


class _ResultsInOrder:
    """Appends a batch's results in call order as they come in (a parallel batch's may come in
    any order); the budget warning goes on the last one."""

    def __init__(self, run: RunState, calls: list[ToolCall]) -> None:
        self.run = run
        self.calls = calls
        self.waiting: dict[str, ToolOutcome] = {}
        self.next = 0

    def add(self, outcome: ToolOutcome) -> list[Message]:
        """The result messages appended now (none while an earlier call is still running)."""
        self.waiting[outcome.call.id] = outcome
        appended: list[Message] = []
        calls, run = self.calls, self.run
        while self.next < len(calls) and calls[self.next].id in self.waiting:
            ready = self.waiting.pop(calls[self.next].id)
            self.next += 1
            content = ready.content
            warning = run.budget.take_warning(run.run_id) if self.next == len(calls) else None
            if warning:
                content = f"{content}\n\n{warning}"
                run.status("budget_warning", warning)
            message = messages.tool_result(ready.call, content, is_error=ready.is_error,
                                           attachments=ready.attachments)
            run.append(message)
            appended.append(message)
        return appended


def _close_calls(run: RunState, calls: list[ToolCall], text: str) -> None:
    """Give calls that will never run a result, so the history stays valid and resumable."""
    answered = {m.tool_call_id for m in run.history[-len(calls) - 1:] if m.role == "tool"}
    for call in calls:
        if call.id not in answered:
            run.append(messages.tool_result(call, text, is_error=True))


async def _budget_summary(run: RunState) -> Stop:
    """Step 5: a tool-less call for a final summary. Tools are switched off with tool_choice
    "none" (their definitions stay, as Anthropic rejects tool blocks in history without them);
    it goes through steps 8-10 like a turn, so prompt-mode conversion and markup filtering
    apply."""
    run.status("budget_exhausted", "iteration budget exhausted; asking for a final summary")
    s = run.settings
    tools = list(run.offered)
    request = ModelRequest(
        model=s.chain.model,
        messages=[*run.request_history(), messages.user(notes.text(notes.BUDGET_SUMMARY))],
        tools=tools,
        tool_choice="none" if tools else None,
        max_tokens=s.max_tokens,
        temperature=s.temperature,
    )
    try:
        response = await _ask(run, request, purpose="summary")
    except ProviderError as exc:
        return Stop("budget_exhausted", f"iteration budget exhausted; summary failed: {exc}")
    reply = messages.assistant(response.message.content)  # any tool calls are ignored
    run.append(reply)
    run.output_parts.append(reply.content)
    return Stop("budget_exhausted", None)


async def _finish(run: RunState, reason: StopReason, *, output: str | None = None,
                  error: str | None = None, exception: Exception | None = None) -> RunResult:
    if output is None:
        output = "".join(run.output_parts) or _last_answer_text(run)
    if reason in _ANSWERED_OR_ENDED and not is_answer(output, prose=run.settings.review.prose):
        output = fallback_answer(run.history, reason)  # never empty, never our own note
        run.status("fallback_answer", "the run ended without an answer from the model; the "
                   "output is the last tool results, headed " + notes.FALLBACK_HEAD,
                   {"replaced": (run.last_reply.content if run.last_reply else "")[:200]})
    result = RunResult(output=output, messages=run.history, stop_reason=reason, turns=run.turn,
                       usage=run.usage.copy(), cost=run.cost,
                       session_id=run.session_id, text=output, exception=exception,
                       error=error, side_usage={purpose: side.to_dict() for purpose, side
                                                in run.calls.side_usage.items()})
    for plugin in run.plugins:  # 17
        try:
            await plugin.on_run_end(run, result)
        except Exception as exc:  # a plugin must not turn a finished run into a crash
            run.status("plugin_error", f"{type(plugin).__name__}.on_run_end failed: {exc}")
    terminal = terminal_event(result, run.agent_tag)
    try:
        run.emit(terminal)
    except Exception as exc:  # a failing callback; the others were still told (Agent.start)
        logger.warning("run %s: an event callback failed on the terminal event: %s",
                       run.run_id, exc)
    return result


_ANSWERED_OR_ENDED = ("completed", "max_turns", "budget_exhausted", "loop_detected")


def _last_answer_text(run: RunState) -> str:
    """The text of this run's last reply if it asked for no tools: text written beside calls
    is no answer (the 0.5B wrote invented weather beside its repeated call), and an earlier
    run's answer in the same session is not this run's."""
    reply = run.last_reply
    return reply.content if reply is not None and not reply.tool_calls else ""
