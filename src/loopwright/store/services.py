"""What an `Agent` gets from its settings for durable state (DESIGN §8), in one place: the
session store, the memory tool and prompt section, recall, and a recorder per run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from loopwright import messages
from loopwright.messages import Message
from loopwright.plugins import LoopPlugin
from loopwright.settings import default_data_dir
from loopwright.store import SessionStore, open_store

if TYPE_CHECKING:
    from loopwright.builtin.memory import MemoryFiles
    from loopwright.memory.background import BackgroundWork
    from loopwright.memory.embeddings import Embedder
    from loopwright.settings import Settings
    from loopwright.store.recorder import SessionRecorder
    from loopwright.tools.base import Tool

CONTINUE_PROMPT = "Continue."
"""The user turn added when a run is started with an empty prompt after a finished answer."""


class StateServices:
    """Built once per agent; shared by all its runs."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.workdir = Path(settings.workdir).resolve() if settings.workdir else Path.cwd()
        self.store: SessionStore | None = open_store(settings.store, data_dir=settings.data_dir)
        # a path, True or a URL: opened here, so closed here; a store object is its owner's (a
        # sub-agent's is its parent's)
        self._owns_store = isinstance(settings.store, str | Path) or settings.store is True
        self.memory: MemoryFiles | None = None
        self._background: BackgroundWork | None = None
        self._embedder: Embedder | None = None
        self._attachments: Path | None = None  # where runs store attachments' bytes
        if settings.memory or settings.memory_learning:
            from loopwright.builtin.memory import memory_files_for

            self.memory = memory_files_for(
                memory_dir=settings.memory_dir, data_dir=settings.data_dir, workdir=self.workdir,
                memory_limit=settings.memory_limit, user_limit=settings.user_limit)

    @property
    def background(self) -> BackgroundWork:
        """Work after the answer (memory learning), awaited by `Agent.aclose()`; made (and its
        module loaded) only by an agent that has some."""
        if self._background is None:
            from loopwright.memory.background import BackgroundWork

            self._background = BackgroundWork()
        return self._background

    async def wait(self) -> None:
        """Let the work after the answer finish."""
        if self._background is not None:
            await self._background.wait()

    async def close_store(self) -> None:
        """Release the store this agent opened (its file, or this event loop's connection);
        the built-in stores open it again on their next call."""
        if self._owns_store and self.store is not None:
            await self.store.aclose()

    def tools(self) -> list[Tool]:
        """Tools to add to the agent's registry (the `memory` tool when memory is on)."""
        if self.memory is None or not self.settings.memory:
            return []
        from loopwright.builtin.memory import memory_tool

        return [memory_tool(self.memory)]

    def prompt_sections(self) -> list[str]:
        """Per-run system-prompt sections (after the cache boundary): the saved memory."""
        if self.memory is None:
            return []
        section = self.memory.prompt_section()
        return [section] if section else []

    def plugins(self) -> list[LoopPlugin]:
        """Loop plugins for every run: memory learning and recall, when on."""
        learning: list[LoopPlugin] = []
        if self.settings.memory_learning and self.memory is not None:
            from loopwright.memory.learning import MemoryLearning

            learning.append(MemoryLearning(self.memory, self.background))
        return learning + self._recall()

    def _recall(self) -> list[LoopPlugin]:
        if not self.settings.recall or self.store is None:
            return []
        from loopwright.store.recall import RecallPlugin, SearchableStore

        if not isinstance(self.store, SearchableStore):
            return []
        if self.settings.embeddings_url and self._embedder is None:  # one per agent: its cache
            from loopwright.memory.embeddings import Embedder

            self._embedder = Embedder(self.settings.embeddings_url,
                                      model=self.settings.embeddings_model,
                                      api_key=self.settings.embeddings_api_key)
        return [RecallPlugin(self.store, limit=self.settings.recall_limit,
                             embedder=self._embedder)]

    def recorder(self, session_id: str, *, model: str, base_url: str = "", api_mode: str = "",
                 parent_id: str | None = None) -> SessionRecorder | None:
        """A recorder for one run on `session_id` (a sub-agent's links to its parent's
        session, `parent_id`), or None without a store."""
        if self.store is None:
            return None
        from loopwright.store.recorder import SessionRecorder

        if self._attachments is None:  # once per agent: the default reads the environment
            data_dir = (Path(self.settings.data_dir) if self.settings.data_dir
                        else default_data_dir())
            self._attachments = data_dir / "attachments"
        return SessionRecorder(self.store, session_id, model=model, base_url=base_url,
                               api_mode=api_mode, cwd=str(self.workdir), parent_id=parent_id,
                               attachments_dir=self._attachments)


def first_user_turn(history: list[Message], prompt: str) -> Message | None:
    """The user message a run starts with.

    An empty prompt continues the task: nothing is added when the history already ends with a
    user turn or tool results (the interrupted request is made again), else "Continue.".
    """
    if prompt.strip():
        return messages.user(prompt)
    if history and history[-1].role in ("user", "tool"):
        return None
    return messages.user(CONTINUE_PROMPT)
