"""A lean Server-Sent Events reader over an async byte stream."""

from __future__ import annotations

from collections.abc import AsyncIterator


async def iter_sse(chunks: AsyncIterator[bytes]) -> AsyncIterator[tuple[str | None, str]]:
    """Yield `(event, data)` per SSE event. Comments and `id:`/`retry:` fields are ignored."""
    buffer = b""
    event: str | None = None
    data: list[str] = []
    async for chunk in chunks:
        buffer += chunk
        while True:
            nl = buffer.find(b"\n")
            if nl < 0:
                break
            raw = buffer[:nl]
            buffer = buffer[nl + 1 :]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if not raw:
                if data:
                    yield event, "\n".join(data)
                event, data = None, []
                continue
            line = raw.decode("utf-8")
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
            elif line.startswith("event:"):
                event = line[6:].strip()
    # a body that ends without its final newline still delivers its last field
    tail = buffer.decode("utf-8").rstrip("\r")
    if tail.startswith("data:"):
        data.append(tail[6:] if tail.startswith("data: ") else tail[5:])
    if data:
        yield event, "\n".join(data)
