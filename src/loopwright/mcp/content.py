"""MCP tool results as the text a model reads.

Text blocks pass through; images and audio become a one-line placeholder with their MIME type and
size (their base64 payload would only burn context); embedded resources show their text, or a
placeholder when they are binary; resource links show name, URI and description. When a result
has no content blocks but structured content, that is shown as JSON.
"""

from __future__ import annotations

import json
from typing import Any

_MAX_DESCRIPTION = 300


def result_text(result: Any) -> str:
    """The text of an MCP `CallToolResult` (duck-typed, so SDK versions may differ in class)."""
    parts = [block_text(block) for block in getattr(result, "content", None) or []]
    text = "\n".join(part for part in parts if part)
    structured = getattr(result, "structured_content", None)
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False, default=str)
    return text


def block_text(block: Any) -> str:
    """One content block as text."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", None) or "application/octet-stream"
        size = _decoded_size(getattr(block, "data", "") or "")
        return f"[{kind}: {mime}, {format_size(size)}; the binary data is not shown]"
    if kind == "resource":
        return _embedded_text(getattr(block, "resource", None))
    if kind == "resource_link":
        return _link_text(block)
    return f"[unsupported content block of type {kind!r}]"


def _embedded_text(resource: Any) -> str:
    uri = getattr(resource, "uri", "?")
    mime = getattr(resource, "mime_type", None)
    label = f"{uri} ({mime})" if mime else str(uri)
    text = getattr(resource, "text", None)
    if text is not None:
        return f"[resource {label}]\n{text}"
    size = _decoded_size(getattr(resource, "blob", "") or "")
    return f"[resource {label}, {format_size(size)} of binary data, not shown]"


def _link_text(link: Any) -> str:
    name = getattr(link, "name", None) or getattr(link, "uri", "?")
    details = [f"<{getattr(link, 'uri', '?')}>"]
    mime = getattr(link, "mime_type", None)
    if mime:
        details.append(f"({mime})")
    text = f"[resource link: {name} {' '.join(details)}"
    description = getattr(link, "description", None)
    if description:
        text += f": {str(description)[:_MAX_DESCRIPTION]}"
    return text + "]"


def _decoded_size(data: str) -> int:
    """Bytes a base64 string decodes to, without decoding it."""
    data = data.strip()
    if not data:
        return 0
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def format_size(size: int) -> str:
    """`512 B`, `1.5 KB`, `2.0 MB`."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"
