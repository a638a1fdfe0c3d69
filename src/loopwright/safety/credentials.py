"""The shapes of well-known credentials (GitHub, GitLab, Slack, OpenAI and Anthropic keys, AWS
access key ids, Google API keys, a private key block): one list for the commands' environment
(`sandbox/env.py`, which removes a variable holding one) and the egress policy (`egress.py`,
which asks before a URL carries one anywhere)."""

from __future__ import annotations

import re
from urllib.parse import unquote

TOKEN_SHAPE = re.compile(
    r"""(
        \bgh[pousr]_[A-Za-z0-9]{20,} | \bgithub_pat_[A-Za-z0-9_]{20,} | \bglpat-[A-Za-z0-9_-]{16,} |
        \bxox[abposr]-[A-Za-z0-9-]{10,} | \bsk-(ant-|proj-)?[A-Za-z0-9_-]{20,} |
        \bAKIA[0-9A-Z]{16}\b | \bAIza[0-9A-Za-z_-]{35} |
        -----BEGIN\ [A-Z ]*PRIVATE\ KEY-----
    )""",
    re.VERBOSE,
)


def carries_credential(text: str) -> bool:
    """Whether `text` holds a well-known credential, as written or percent-decoded (once and
    twice: a URL carries it encoded)."""
    once = unquote(text)
    return any(TOKEN_SHAPE.search(form) for form in dict.fromkeys((text, once, unquote(once))))
