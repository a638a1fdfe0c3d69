"""Start-up of the commands a person waits on (`run`, `chat`): no cyclic garbage collection while
their modules load.

Loading them makes several hundred thousand long-lived objects (modules, classes, functions);
the collector walks them again and again and frees nothing — about a sixth of the CPU before the
first model request. Collection resumes before the agent runs, with what start-up made frozen so
that later collections skip it.
"""

from __future__ import annotations

import gc


def pause_collection() -> None:
    gc.disable()


def resume_collection() -> None:
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
