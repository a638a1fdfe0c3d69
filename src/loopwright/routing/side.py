"""Side models: a model (and its own fallbacks) per side task, each defaulting to the main model.

Side tasks and their settings: compaction summaries (`summary_model`, `summary_fallbacks`),
rubric grading (`grader_model`, `grader_fallbacks`), memory extraction (`memory_model`,
`memory_fallbacks`) and the intent router (`router_model`, `router_fallbacks`). A model is a string
(`"ollama:qwen2.5"`, an alias) or a table with `model` and optionally `base_url`, `api_key`,
`api_mode` — the same forms as `fallbacks`.

Each run gets its own chain per side task (`side_chains`, handed to the run's `ModelCalls`), so a
side model that fell back stays on its fallback for the rest of that run, as the main chain does.
"""

from __future__ import annotations

from typing import Any

from loopwright.endpoints.client import ModelClient
from loopwright.endpoints.fallback import ProviderChain
from loopwright.endpoints.resolve import Resolved, resolve_model
from loopwright.errors import ConfigError
from loopwright.settings import SIDE_TASKS

_TABLE_KEYS = ("model", "base_url", "api_key", "api_mode")
PURPOSES = {"summary": "compaction", "grader": "grading", "memory": "memory",
            "router": "router"}
"""The `model_call` purpose each side task's calls carry."""


def resolve_model_spec(item: Any, aliases: dict[str, str], *, setting: str = "fallback"
                       ) -> Resolved:
    """A model given as a string or a table (`model`, `base_url`, `api_key`, `api_mode`)."""
    if isinstance(item, str) and item.strip():
        return resolve_model(item, aliases=aliases)
    if isinstance(item, dict) and item.get("model"):
        _check_table(item, setting)
        return resolve_model(item["model"], base_url=item.get("base_url"),
                             api_key=item.get("api_key"), api_mode=item.get("api_mode"),
                             aliases=aliases)
    raise ConfigError(f"{setting} {item!r}: give a model string or a table with at least 'model' "
                      "(and optionally base_url, api_key, api_mode)")


def _check_table(item: dict[str, Any], setting: str) -> None:
    """A misspelt or unsupported key would otherwise be dropped without a word."""
    for key, value in item.items():
        if key not in _TABLE_KEYS:
            hint = f" (use {setting.split('_')[0]}_fallbacks)" if key == "fallbacks" \
                and setting.endswith("_model") else ""
            raise ConfigError(f"{setting}: unknown key {key!r}{hint}; a model table holds "
                              f"{', '.join(_TABLE_KEYS)}")
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{setting}: {key!r} must be text, got {value!r}"[:300])


def resolve_side_models(settings: Any) -> dict[str, list[Resolved]]:
    """The chain of each side task that has its own model (tasks without one are left out)."""
    out: dict[str, list[Resolved]] = {}
    for task in SIDE_TASKS:
        model = getattr(settings, f"{task}_model", None)
        fallbacks = getattr(settings, f"{task}_fallbacks", None) or []
        if model is None or model == "":
            if fallbacks:
                raise ConfigError(f"{task}_fallbacks is set but {task}_model is not; name the "
                                  f"{task} model first")
            continue
        if not isinstance(fallbacks, list):
            raise ConfigError(f"{task}_fallbacks must be a list of models, got {fallbacks!r}")
        chain = [resolve_model_spec(model, settings.aliases, setting=f"{task}_model")]
        chain += [resolve_model_spec(item, settings.aliases, setting=f"{task}_fallbacks")
                  for item in fallbacks]
        out[task] = chain
    return out


def side_chains(main: ProviderChain, clients: dict[str, list[ModelClient]]
                ) -> dict[str, ProviderChain]:
    """One run's chain per side-call purpose (`model_call` purposes: "compaction", "grading",
    "memory", "router") for the side tasks that have a model of their own."""
    return {PURPOSES[task]: ProviderChain(clients=list(found),
                                          refresh_credentials=main.refresh_credentials)
            for task, found in clients.items() if found}
