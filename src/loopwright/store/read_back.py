"""Attachments a resumed session can no longer send: a file attached by path that was edited,
moved, deleted or replaced since (or, in a row written before digests were recorded, a file
that is not the store's own copy). The session goes on without it: the model is told plainly
that the attachment is no longer available, and the user is warned once, naming the file and
why. Nothing else is read from it and none of it is sent."""

from __future__ import annotations

import asyncio
import dataclasses
import warnings

from loopwright import messages, notes
from loopwright.messages import Message


class AttachmentGoneWarning(UserWarning):
    """Warned once for each attachment a resumed session no longer sends: which file, and why."""


def gone_note(name: str) -> str:
    """What the model is told in place of an attachment it can no longer see."""
    return notes.render(notes.ATTACHMENT_GONE, file=name)


async def sendable_history(session_id: str, history: list[Message]) -> list[Message]:
    """`history` as a run may start from it, wherever it came from (a stored session resumed,
    or `history=`, maybe a `store.load()` of another): each attachment read back from a row that
    can no longer be sent replaced by a note, and a warning for each file; read off the loop."""
    if not messages.any_attachments(history):
        return history
    kept, gone = await asyncio.to_thread(available_history, session_id, history)
    for line in gone:
        warnings.warn(AttachmentGoneWarning(line), stacklevel=3)
    return kept


def available_history(session_id: str, history: list[Message]
                      ) -> tuple[list[Message], list[str]]:
    """`history` with each attachment read back from the store that cannot be sent again left
    out of its message and a note for the model in its place (a message kept as it is when
    all of its attachments can be), and one line for the user per file left out.
    Blocking: reads each file attached by path, so call it in a worker thread."""
    kept: list[Message] = []
    warned: list[str] = []
    for message in history:
        reasons = [(attachment, attachment.unavailable()) for attachment in message.attachments]
        gone = [(attachment, why) for attachment, why in reasons if why is not None]
        if not gone:
            kept.append(message)
            continue
        notes = "\n".join(gone_note(attachment.filename) for attachment, _ in gone)
        content = f"{message.content}\n\n{notes}" if message.content else notes
        kept.append(dataclasses.replace(
            message, content=content,
            attachments=[attachment for attachment, why in reasons if why is None]))
        for attachment, why in gone:
            # the session it was stored in: a run given `history=store.load(...)` may have
            # no store, and only an id made up for it
            where = attachment.stored_session or session_id
            line = (f"session {where}: attachment {attachment.filename} ({attachment.path}) "
                    "is no longer available, so the model is told so "
                    f"instead: {why}")
            if line not in warned:  # a file attached twice is one warning
                warned.append(line)
    return kept, warned
