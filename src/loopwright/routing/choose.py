"""Per-call model routing: the `choose_model` hook.

`choose_model` is a Python callable (an `Agent` argument) or a list of rules (config). It runs
before each model call with a `ChoiceContext` (turn, purpose, current model, the latest user
message, message and tool counts) and answers None (keep the model), a model, or a
`ModelChoice` — `enforce=True` sends this one call to that model (the run's own chain follows as
its fallback); `enforce=False` only records the suggestion (`status` `model_suggested`). A switch
is reported as `status` `model_switch`.

A rule is a table: `model` (a model string or table, required), and optional conditions that
must all hold — `match` (a regular expression searched in the latest user message, case
ignored), `max_prompt_chars`, `turn` (only that turn), `purpose` (default "turn": rules leave
side calls alone) — plus `enforce` (default true). The first rule that holds wins.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopwright.endpoints.fallback import ProviderChain
from loopwright.errors import ConfigError
from loopwright.messages import Message, ModelRequest

RULE_KEYS = frozenset({"model", "match", "max_prompt_chars", "turn", "purpose", "enforce"})


@dataclass(frozen=True, kw_only=True)
class ChoiceContext:
    """What `choose_model` sees of the call about to be made."""

    turn: int
    purpose: str  # "turn", "compaction", "grading", "memory", "router", "summary", …
    model: str  # the model the call would go to
    prompt: str  # the latest user message
    messages: int
    tools: int
    history: Sequence[Message] = field(default=(), repr=False)


@dataclass(frozen=True)
class ModelChoice:
    """A model for one call: enforced, or only suggested."""

    model: Any  # a model string or a table like a fallback
    enforce: bool = True
    reason: str = ""


ChooseModel = Callable[[ChoiceContext], Any]
"""Returns None, a model string, or a `ModelChoice` (or an awaitable of one of them)."""
ChainFactory = Callable[[Any, ProviderChain], ProviderChain]


def chooser_from_setting(value: Any) -> ChooseModel | None:
    """The `choose_model` setting as a callable: itself, or the rules it lists."""
    if value is None or value == []:
        return None
    if callable(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise ConfigError(f"choose_model must be a function or a list of rules, got {value!r}")
    rules = [_checked_rule(rule, n) for n, rule in enumerate(value, start=1)]
    return lambda context: _first_rule(rules, context)


def _checked_rule(rule: Any, n: int) -> dict[str, Any]:
    if not isinstance(rule, dict) or not rule.get("model"):
        raise ConfigError(f"choose_model rule {n}: give a table with at least 'model'")
    unknown = sorted(set(rule) - RULE_KEYS)
    if unknown:
        raise ConfigError(f"choose_model rule {n}: unknown key(s) {', '.join(unknown)}; known: "
                          f"{', '.join(sorted(RULE_KEYS))}")
    checked = dict(rule)
    if "match" in rule:
        try:
            checked["match"] = re.compile(str(rule["match"]), re.IGNORECASE)
        except re.error as exc:
            raise ConfigError(f"choose_model rule {n}: bad 'match' pattern: {exc}") from None
    for key in ("max_prompt_chars", "turn"):
        if key in rule and (not isinstance(rule[key], int) or isinstance(rule[key], bool)):
            raise ConfigError(f"choose_model rule {n}: {key} must be a whole number")
    if not isinstance(rule.get("enforce", True), bool):
        raise ConfigError(f"choose_model rule {n}: enforce must be true or false")
    return checked


def _first_rule(rules: list[dict[str, Any]], context: ChoiceContext) -> ModelChoice | None:
    for n, rule in enumerate(rules, start=1):
        if rule.get("purpose", "turn") != context.purpose:
            continue
        if "turn" in rule and rule["turn"] != context.turn:
            continue
        if "max_prompt_chars" in rule and len(context.prompt) > rule["max_prompt_chars"]:
            continue
        if "match" in rule and not rule["match"].search(context.prompt):
            continue
        return ModelChoice(rule["model"], enforce=rule.get("enforce", True), reason=f"rule {n}")
    return None


class ModelRouter:
    """Applies a chooser to one run's calls; the chains it switches to are made once per model
    per run (`make_chain`: the chosen model first, then the call's own chain as fallback)."""

    def __init__(self, chooser: ChooseModel, make_chain: ChainFactory) -> None:
        self.chooser = chooser
        self.make_chain = make_chain
        self._chains: dict[str, ProviderChain] = {}

    async def route(self, run: Any, request: ModelRequest, purpose: str,
                    chain: ProviderChain) -> ProviderChain | None:
        """The chain this call should use instead of `chain`, or None to keep it."""
        context = ChoiceContext(
            turn=run.turn, purpose=purpose, model=chain.model,
            prompt=next((m.content for m in reversed(request.messages) if m.role == "user"), ""),
            messages=len(request.messages), tools=len(request.tools), history=run.history)
        try:
            answer = self.chooser(context)
            if inspect.isawaitable(answer):
                answer = await answer
            if answer is None:
                return None
            choice = answer if isinstance(answer, ModelChoice) else ModelChoice(answer)
            name = choice.model if isinstance(choice.model, str) else str(choice.model["model"])
        except Exception as exc:  # a broken hook keeps the model; the run goes on
            run.status("hook_error", f"choose_model failed; the model is kept: {exc}",
                       {"hook": "choose_model"})
            return None
        if name == chain.model:
            return None
        why = f" ({choice.reason})" if choice.reason else ""
        data = {"from": chain.model, "to": name, "purpose": purpose, "enforced": choice.enforce,
                "reason": choice.reason}
        if not choice.enforce:
            run.status("model_suggested", f"choose_model suggests {name}{why} for this "
                       f"{purpose} call; kept {chain.model}", data)
            return None
        key = f"{name}\0{id(chain)}"
        if key not in self._chains:
            try:
                self._chains[key] = self.make_chain(choice.model, chain)
            except ConfigError as exc:
                run.status("hook_error", f"choose_model chose {name!r}, which cannot be used; "
                           f"the model is kept: {exc}", {"hook": "choose_model"})
                return None
        run.status("model_switch", f"{purpose} call sent to {name} instead of {chain.model}{why}",
                   data)
        return self._chains[key]


RouteFunction = Callable[[Any, ModelRequest, str, ProviderChain],
                         Awaitable[ProviderChain | None]]
