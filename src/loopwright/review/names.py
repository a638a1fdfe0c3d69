"""The names of the built-in checks, in table order (`table.py` builds the table from them):
a module of its own so that reading the settings can check a `review` list without importing
the checks."""

from __future__ import annotations

# every built-in check, by name, in table order (docs/settings.md lists them)
CHECK_NAMES: tuple[str, ...] = (
    # calls: structural; answer_again before the doom loop, which would stop the run; the
    # argument checks after it, so that a call repeated with the same bad arguments is still
    # counted as a loop
    "duplicate_calls", "call_limit", "answer_again", "doom_loop", "unknown_tool", "bad_arguments",
    # answers: the unread-file note names the call to make, so it comes before the others (told
    # only "you repeated a runtime note" for an echo of it, the 0.5B answered without the file)
    "unread_file", "imitated_markup", "echoed_note", "copied_preamble", "dangling_colon",
    "call_format", "narration", "after_error", "call_after_error",
)
