"""A lean Server-Sent Events reader over an async byte stream.

Lines may end in LF, CRLF or a lone CR (all three are legal SSE), also when a chunk boundary
falls between the CR and the LF. Work is linear in the bytes received: a line that arrives in
many small chunks is joined once, not re-scanned per chunk."""

from __future__ import annotations

from collections.abc import AsyncIterator

# bytes membership by the byte's value: `b"\r" in chunk` first tries the operand as an integer,
# making and dropping a formatted TypeError on every chunk (~7x slower)
_CR, _LF = ord("\r"), ord("\n")


async def iter_sse(chunks: AsyncIterator[bytes]) -> AsyncIterator[tuple[str | None, str]]:
    """Yield `(event, data)` per SSE event. Comments and `id:`/`retry:` fields are ignored."""
    partial: list[bytes] = []  # the line being received, in pieces
    event: str | None = None
    data: list[str] = []
    after_cr = False  # the last chunk ended in CR: an LF opening the next one belongs to it
    async for chunk in chunks:
        if after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        after_cr = chunk.endswith(b"\r")
        if _CR in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if _LF not in chunk:
            if chunk:
                partial.append(chunk)
            continue
        lines = chunk.split(b"\n")
        if partial:
            lines[0] = b"".join(partial) + lines[0]
        last = lines.pop()
        partial = [last] if last else []
        for raw in lines:
            if not raw:
                if data:
                    yield event, "\n".join(data)
                event, data = None, []
                continue
            event = _read_field(raw.decode("utf-8"), event, data)
    # a body that ends without its final newline still delivers its last field
    if partial:
        event = _read_field(b"".join(partial).decode("utf-8"), event, data)
    if data:
        yield event, "\n".join(data)


def _read_field(line: str, event: str | None, data: list[str]) -> str | None:
    """Take one line's field into `data`; return the event name in force after it."""
    if line.startswith("data:"):
        data.append(line[6:] if line.startswith("data: ") else line[5:])
    elif line.startswith("event:"):
        return line[6:].strip()
    return event
