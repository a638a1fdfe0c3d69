"""The fake server's `POST [/v1]/embeddings` (OpenAI-compatible, as llama.cpp's server and most
local servers serve it): by default a deterministic bag-of-words vector per input, so texts that
share words are close; a test may pass its own `embed` function to model meaning."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from typing import Any

EmbedFunction = Callable[[str], list[float]]
DIMENSIONS = 256
_WORD = re.compile(r"[a-z0-9]+")


def bag_of_words(text: str) -> list[float]:
    """Each lower-cased word adds one to a bucket picked by its hash; the vector is normalised."""
    vector = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big")
        vector[bucket % DIMENSIONS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def embeddings_payload(body: Any, embed: EmbedFunction, default_model: str
                       ) -> tuple[int, dict[str, Any]]:
    """(status, JSON) answering an embeddings request body."""
    inputs = body.get("input") if isinstance(body, dict) else None
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs or not all(isinstance(i, str) for i in inputs):
        return 400, {"error": {"message": "FakeModelServer: 'input' must be a string or a "
                                          "non-empty list of strings", "type": "invalid_request"}}
    tokens = sum(len(text) // 4 + 1 for text in inputs)
    return 200, {
        "object": "list",
        "model": body.get("model") or default_model,
        "data": [{"object": "embedding", "index": n, "embedding": embed(text)}
                 for n, text in enumerate(inputs)],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
