"""One agent's providers are resolved once per event loop that asks first, whichever loops ask:
`chat()` from several threads at once (each on a loop of its own) on a fresh agent."""

from __future__ import annotations

import threading
import time

from loopwright import Agent
from loopwright.testing import FakeModelServer, Reply

CALLERS = 8


def test_first_chats_from_eight_threads_at_once_all_succeed() -> None:
    answers: dict[int, object] = {}
    with FakeModelServer([Reply("answer") for _ in range(CALLERS)],
                         context_window=32_000, strict=False) as server:
        agent = Agent("m", base_url=server.base_url, api_key="k")
        start = threading.Barrier(CALLERS)

        def one_chat(n: int) -> None:
            start.wait()
            try:
                answers[n] = agent.chat(f"question {n}")
            except Exception as exc:  # (the failure is asserted below, by what it says)
                answers[n] = exc

        # daemon threads: a caller stuck on a lock woken from another loop must not hang pytest
        threads = [threading.Thread(target=one_chat, args=(n,), daemon=True)
                   for n in range(CALLERS)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        model_requests = len(server.model_requests)
    assert [n for n, thread in enumerate(threads) if thread.is_alive()] == []
    assert answers == dict.fromkeys(range(CALLERS), "answer")
    assert model_requests == CALLERS
    (window,) = agent.windows  # resolved once, whichever loop asked first
    # the server's, probed — unless the probe's 1 s bound ran out under a loaded machine
    assert window.tokens == 32_000 or window.source == "default", window
