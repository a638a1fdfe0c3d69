"""The ablation switches of bench/real_model.py: which reply checks loopwright runs.

`--review MODE` passes the review stage's own setting through (`auto`, `all`, `off`, or a comma
list of check names). `--review-off NAME[,NAME]` turns named checks off: a name that is a boolean
Agent setting (before the review stage: `narration_nudge`, `unread_file_nudge`,
`text_tool_calls`) is set to false; any other name is a check of the review stage, passed as
its `review_off` setting (or, without that setting, left out of the list of every check it
registers). Since the prose checks became opt-in (`review="auto"` runs the structural checks
only), an ablation of them is `--review all` against the default; `--review-off` of a prose
check changes nothing under "auto".
Whatever the installed loopwright cannot do is refused before any model runs, with what it can.
"""

from __future__ import annotations

import argparse
import importlib
import typing
from collections.abc import Iterable
from typing import Any

MODES = ("auto", "all", "off")
# where the review stage may list its checks, by attribute name; strings or objects with .name
CHECK_LISTS = ("CHECK_NAMES", "CHECKS", "DEFAULT_CHECKS", "check_names", "default_checks")


def agent_options() -> dict[str, Any]:
    """The keyword settings `Agent` accepts, with their types."""
    for home in ("loopwright.settings", "loopwright.config", "loopwright.agent"):
        options = getattr(importlib.import_module(home), "AgentOptions", None)
        if options is not None:
            return typing.get_type_hints(options)
    raise SystemExit("cannot find loopwright's AgentOptions: the ablation switches need it")


def registered_checks() -> list[str] | None:
    """The names of every check the review stage registers, or None when it lists none."""
    for home in ("loopwright.review.table", "loopwright.review"):
        try:
            names = _listed_checks(importlib.import_module(home))
        except ImportError:
            continue
        if names is not None:
            return names
    return None


def _listed_checks(review: Any) -> list[str] | None:
    for attribute in CHECK_LISTS:
        found = getattr(review, attribute, None)
        if callable(found):
            found = found()
        if isinstance(found, dict):
            found = list(found)
        if isinstance(found, Iterable) and not isinstance(found, str):
            names = [item if isinstance(item, str) else getattr(item, "name", None)
                     for item in found]
            if names and all(isinstance(n, str) for n in names):
                return [n for n in names if isinstance(n, str)]
    return None


def switches(options: dict[str, Any]) -> list[str]:
    return sorted(name for name, kind in options.items() if kind is bool and name not in
                  ("stream", "raise_on_error", "approve_all", "strict_tools", "otel",
                   "web_allow_private", "memory_learning", "recall"))


def review_settings(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The Agent settings for `--review` and `--review-off`, and a label for the table."""
    if not args.review and not args.review_off:
        return {}, ""
    options = agent_options()
    settings: dict[str, Any] = {}
    labels: list[str] = []
    if args.review:
        if "review" not in options:
            raise SystemExit(
                "this loopwright has no `review` setting: the review stage has not landed. "
                f"Boolean settings --review-off can set false: {', '.join(switches(options))}")
        names = [n for n in args.review.split(",") if n]
        settings["review"] = args.review if args.review in MODES else names
        labels.append(f"review={args.review}")
    off = [n for n in args.review_off.split(",") if n]
    staged = [n for n in off if options.get(n) is not bool]
    for name in off:
        if options.get(name) is bool:
            settings[name] = False
    if staged and "review_off" in options:
        known = registered_checks()
        if known is not None and (unknown := [n for n in staged if n not in known]):
            raise SystemExit(f"no check named {', '.join(unknown)}; checks: {', '.join(known)}")
        settings["review_off"] = staged
    elif staged:
        settings["review"] = review_without(staged, options, settings.get("review"))
    if off:
        labels.append(f"off: {','.join(off)}")
    return settings, " ".join(labels)


def review_without(off: list[str], options: dict[str, Any], chosen: Any) -> list[str]:
    """The review stage's list of checks without `off`: the checks `--review` named, or every
    registered check."""
    known = registered_checks()
    if "review" not in options or known is None:
        raise SystemExit(
            f"cannot turn off {', '.join(off)}: "
            + ("this loopwright has no `review` setting (the review stage has not landed)"
               if "review" not in options else
               "loopwright.review lists no checks (looked for " + ", ".join(CHECK_LISTS) + ")")
            + f". Boolean switches it has: {', '.join(switches(options))}")
    if unknown := [n for n in off if n not in known]:
        raise SystemExit(f"no check named {', '.join(unknown)}; checks: {', '.join(known)}")
    base = chosen if isinstance(chosen, list) else known
    if chosen == "off":
        raise SystemExit("--review off runs no check: nothing left to turn off")
    return [n for n in base if n not in off]
