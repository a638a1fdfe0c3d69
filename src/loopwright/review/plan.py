"""From an agent's settings (and, for reading calls written as text, the model's profile) to
the review plan of its runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopwright.profiles import GENERIC
from loopwright.review.stage import ReviewPlan
from loopwright.review.table import active_checks, default_checks, with_user_checks

if TYPE_CHECKING:
    from collections.abc import Callable

    from loopwright.endpoints.client import ModelClient
    from loopwright.endpoints.fallback import ProviderChain
    from loopwright.profiles import Profile
    from loopwright.review.check import Check
    from loopwright.settings import Settings


def review_plan(settings: Settings, profile: Profile, *, prompt_mode: bool) -> ReviewPlan:
    """The checks a run gets, in table order, and the budget they share. The checks that read
    prose are opt-in for every model; those for small models only run under "auto" only for a
    profile that says small and local (`Profile.small_local`; `table.active_checks`).

    Made once for the same settings (a plan holds check templates: every run takes its own
    from them, `Check.for_run`), not again for every run of an agent; a user check counts by
    identity, as it stood when the plan was made."""
    mode = settings.review
    user = tuple(settings.review_checks)
    key = (settings.doom_loop_threshold, settings.max_tool_calls_per_reply, prompt_mode,
           tuple(mode) if isinstance(mode, list) else mode, tuple(settings.review_off),
           settings.review_budget, profile.small_local, tuple(map(id, user)))
    kept = _plans.get(key)
    if kept is not None:
        return kept[1]
    table = with_user_checks(
        default_checks(doom_loop_threshold=settings.doom_loop_threshold,
                       max_calls_per_reply=settings.max_tool_calls_per_reply,
                       prompt_mode=prompt_mode),
        user)
    checks = active_checks(table, mode=mode, off=settings.review_off,
                           small_local=profile.small_local)
    plan = ReviewPlan(checks=tuple(checks), budget=settings.review_budget,
                      prose=any(c.reads_prose for c in checks))
    if len(_plans) >= _PLANS_KEPT:
        _plans.clear()
    _plans[key] = (user, plan)  # the user's checks kept alive: their ids stay theirs
    return plan


_PlanKey = tuple[object, ...]
_plans: dict[_PlanKey, tuple[tuple[Check, ...], ReviewPlan]] = {}
_PLANS_KEPT = 64


def reads_text_calls(settings: Settings, profile: Profile, *, prompt_mode: bool,
                     server_kind: str | None = None) -> bool:
    """Whether calls written in a reply's text are read as calls: always in prompt mode; in
    native mode (`text_tool_calls`) for a model known to be small and local — by its profile
    (`Profile.small_local`), or, for a name no profile knows, by the server that answers for it
    being one that runs open weights itself (llama.cpp, Ollama, LM Studio, vLLM: `server_kind`,
    from its `/models` as listed to this client's own key: a gateway may route another key
    elsewhere) — or for every model under `review = "all"`. Never for a frontier or
    any other hosted model: a fenced JSON example in a how-to answer is not a call, and an
    unknown name may be a hosted one (an Azure deployment, a proxy's alias)."""
    if prompt_mode:
        return True
    if not settings.text_tool_calls:
        return False
    unknown_on_a_local_server = profile == GENERIC and server_kind in LOCAL_SERVER_KINDS
    return settings.review == "all" or profile.small_local or unknown_on_a_local_server


def text_call_reader(settings: Settings, chain: ProviderChain, *, prompt_mode: bool
                     ) -> Callable[[], bool] | None:
    """`reads_text_calls` asked of the model answering now — the chain's current client, which
    a fallback changes mid-run (a small local model, then a hosted one) — or None when no model
    of the chain has its text read."""
    from loopwright.endpoints.servers import endpoint_kind

    def reads(client: ModelClient) -> bool:
        return reads_text_calls(settings, client.profile, prompt_mode=prompt_mode,
                                server_kind=endpoint_kind(client.endpoint))

    if not any(reads(client) for client in chain.clients):
        return None
    return lambda: reads(chain.current)


LOCAL_SERVER_KINDS = frozenset({"llamacpp", "ollama", "lmstudio", "vllm"})
"""The servers that run open weights themselves (`endpoints.servers`), as opposed to a proxy or
another OpenAI-compatible API."""
