"""Embeddings for recall: any OpenAI-compatible `POST /v1/embeddings` (llama.cpp's server with an
embedding GGUF, vLLM, Ollama, OpenAI), set with `embeddings_url` (and `embeddings_model`,
`embeddings_api_key`). Vectors of texts already seen are kept for the agent's life."""

from __future__ import annotations

import asyncio
import math
from collections import OrderedDict
from typing import Any

import httpx

from loopwright.endpoints.base import Endpoint, request_slot, shown_url
from loopwright.errors import ProviderError

MAX_CACHED = 4_096
MAX_TEXT_CHARS = 2_000  # each input, cut: recall compares short snippets
MAX_DIMENSIONS = 16_384  # the widest embedding models use 4,096-8,192
MAX_REPLY_BYTES = 64 * 1024 * 1024
TIMEOUT = 30.0


class Embedder:
    """Asks an embeddings endpoint for vectors; one request per batch of new texts."""

    def __init__(self, base_url: str, *, model: str | None = None,
                 api_key: str | None = None) -> None:
        from loopwright.endpoints.resolve import require_scheme

        self.endpoint = Endpoint(base_url=require_scheme(base_url, "embeddings_url"),
                                 api_key=api_key, name="embeddings")
        self.model = model or "default"
        self._cache: OrderedDict[str, list[float]] = OrderedDict()

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order; `ProviderError` when the endpoint fails or answers
        something that is not a vector per input."""
        cut = [text[:MAX_TEXT_CHARS] for text in texts]
        missing = list(dict.fromkeys(t for t in cut if t not in self._cache))
        if missing:
            for text, vector in zip(missing, await self._request(missing), strict=True):
                self._cache[text] = vector
                if len(self._cache) > MAX_CACHED:
                    self._cache.popitem(last=False)
        return [self._cache[text] for text in cut]

    async def _request(self, texts: list[str]) -> list[list[float]]:
        url = self.endpoint.url("/embeddings")
        where = shown_url(url)  # the credentials a URL may carry are sent, never shown
        try:
            async with request_slot(url=url) as client:
                reply = await client.post(url, json={"model": self.model, "input": texts},
                                          headers=self.endpoint.request_headers(),
                                          timeout=TIMEOUT)
        except httpx.HTTPError as exc:
            raise ProviderError(f"embeddings endpoint {where}: {type(exc).__name__}: {exc}") \
                from exc
        if reply.status_code != 200:
            raise ProviderError(f"embeddings endpoint {where}: HTTP {reply.status_code}: "
                                f"{reply.text[:200]}", status=reply.status_code)
        if len(reply.content) > MAX_REPLY_BYTES:
            raise ProviderError(f"embeddings endpoint {where}: a reply of {len(reply.content):,} "
                                f"bytes, over the {MAX_REPLY_BYTES:,} limit")
        return await asyncio.to_thread(_vectors, reply, len(texts), where)  # big JSON: off the loop


def _vectors(reply: httpx.Response, count: int, where: str) -> list[list[float]]:
    try:
        data: Any = reply.json()["data"]
        ordered = sorted(data, key=lambda item: int(item["index"]))
        vectors = [[float(x) for x in item["embedding"]] for item in ordered]
    except (ValueError, KeyError, TypeError) as exc:
        raise ProviderError(f"embeddings endpoint {where}: not an embeddings reply: "
                            f"{reply.text[:200]!r}") from exc
    if len(vectors) != count or len({len(v) for v in vectors}) > 1 or not vectors[0]:
        raise ProviderError(f"embeddings endpoint {where}: {len(vectors)} vectors for {count} "
                            "inputs, or vectors of different lengths")
    if len(vectors[0]) > MAX_DIMENSIONS:
        raise ProviderError(f"embeddings endpoint {where}: vectors of {len(vectors[0]):,} "
                            f"dimensions, over the {MAX_DIMENSIONS:,} limit; check the model")
    if not all(math.isfinite(x) for vector in vectors for x in vector):
        raise ProviderError(f"embeddings endpoint {where}: a vector holds a value that is not a "
                            "finite number (NaN or infinity); check the model")
    return vectors


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
