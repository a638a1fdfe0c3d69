"""`web_fetch`: fetch a URL and return it as Markdown (HTML) or text, size-capped."""

from __future__ import annotations

import json
from typing import Annotated
from urllib.parse import urlsplit

import httpx
from pydantic import Field

from loopwright.builtin.html_markdown import html_to_markdown
from loopwright.errors import ToolError
from loopwright.tools.base import tool

MAX_DOWNLOAD_BYTES = 5 * 1024 * 1024
DEFAULT_MAX_CHARS = 40_000
FETCH_TIMEOUT = 30.0
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml",
               "application/javascript", "application/x-yaml", "application/yaml",
               "application/toml", "+json", "+xml")


@tool(read_only=True, tags={"web"})
async def web_fetch(
    url: str,
    max_chars: Annotated[int, Field(ge=1000, le=200_000)] = DEFAULT_MAX_CHARS,
) -> str:
    """Fetch a web page or text resource over HTTP(S). HTML comes back as Markdown (links kept,
    scripts and styles dropped); JSON and plain text as they are. Long pages are cut at
    `max_chars` characters.

    Args:
        url: The http:// or https:// address to fetch.
        max_chars: Maximum characters of content to return.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ToolError(f"{url!r} is not an http(s) URL.")
    body, content_type, final_url, status = await _download(url)
    if status >= 400:
        preview = body[:500].decode("utf-8", errors="replace")
        raise ToolError(f"fetching {url} failed with HTTP {status}: {preview}")
    text = _decode(body, content_type)
    if "html" in content_type or (not content_type and text.lstrip().startswith("<")):
        title, text = html_to_markdown(text, final_url)
        header = f"# {title}\n\n" if title and not text.startswith("# ") else ""
        text = header + text
    elif "json" in content_type:
        text = _pretty_json(text)
    note = ""
    if len(text) > max_chars:
        note = (f"\n\n[content cut at {max_chars:,} of {len(text):,} characters; raise max_chars "
                "to see more]")
        text = text[:max_chars]
    source = f"Source: {final_url}" + (f" (redirected from {url})" if final_url != url else "")
    return f"{source}\n\n{text}{note}"


async def _download(url: str) -> tuple[bytes, str, str, int]:
    """(body, content type, final URL, status); the body stops at MAX_DOWNLOAD_BYTES."""
    headers = {"User-Agent": "loopwright-web-fetch/0.1",
               "Accept": "text/html,text/markdown,text/plain,application/json;q=0.9,*/*;q=0.5"}
    try:
        async with (
            httpx.AsyncClient(follow_redirects=True, timeout=FETCH_TIMEOUT,
                              headers=headers) as client,
            client.stream("GET", url) as response,
        ):
                content_type = response.headers.get("content-type", "").lower()
                if content_type and not _is_text(content_type):
                    raise ToolError(f"{url} is {content_type.split(';')[0]}, not a text or HTML "
                                    "document; web_fetch only reads text.")
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size >= MAX_DOWNLOAD_BYTES:
                        break
                return (b"".join(chunks)[:MAX_DOWNLOAD_BYTES], content_type, str(response.url),
                        response.status_code)
    except httpx.HTTPError as exc:
        raise ToolError(f"fetching {url} failed: {type(exc).__name__}: {exc}") from exc


def _is_text(content_type: str) -> bool:
    kind = content_type.split(";")[0].strip()
    return any(kind.startswith(t) or kind.endswith(t) for t in _TEXT_TYPES)


def _decode(body: bytes, content_type: str) -> str:
    charset = "utf-8"
    for param in content_type.split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip("\"'")
    try:
        return body.decode(charset, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def _pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text
