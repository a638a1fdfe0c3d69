"""The environment a command gets: the user's, minus anything that looks like a credential.

A variable is removed when its name looks like a secret (`*_API_KEY`, `*_KEY`, `*_TOKEN`,
`*SECRET*`, `*PASSWORD*`, `*_PWD`, `*_DSN`, `*WEBHOOK*`, `AWS_*`, `AZURE_*`,
`GOOGLE_APPLICATION_CREDENTIALS`, agent sockets, …) or its value does: a URL carrying a user or
password (`postgres://user:pw@host/db`, a Sentry DSN `https://KEY@o1.ingest.sentry.io/1`), a
webhook URL (Slack, Discord, Teams, Zapier, Google Chat; they are their own credential), a URL
whose query carries a token, key, secret or signature, or a well-known token shape (GitHub,
GitLab, Slack, OpenAI/Anthropic, AWS access key ids, Google API keys, a private key block).
The user lets one through by name in `env_passthrough` (shell-style patterns allowed: `"NPM_*"`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

from loopwright.safety.credentials import TOKEN_SHAPE

_SECRET_NAME = re.compile(
    r"""(
        (^|_)API_?KEYS?($|_) | (^|_)(ACCESS|SECRET|PRIVATE|SIGNING|ENCRYPTION|MASTER|AUTH)_?KEY |
        _KEYS?$ |
        (^|_)(TOKEN|TOKENS)($|_) | TOKEN$ |
        SECRET | PASSWORD | PASSWD | PASSPHRASE | CREDENTIAL | (^|_)PASS($|_) |
        .+_PWD$ | (^|_)DSN($|_) | WEBHOOK |
        (^|_)AUTH($|_) | AUTHORIZATION | COOKIE | (^|_)PAT($|_) |
        ^AWS_ | ^AZURE_ | ^GOOGLE_APPLICATION_CREDENTIALS$ | ^GCP_SERVICE_ACCOUNT |
        ^SSH_AUTH_SOCK$ | ^GPG_AGENT_INFO$ | ^KRB5CCNAME$ | ^VAULT_ | ^OP_SESSION_
    )""",
    re.VERBOSE | re.IGNORECASE,
)
# a URL with user information (`user@`, `user:password@`, `KEY@` as in a Sentry DSN)
_URL_WITH_CREDENTIALS = re.compile(r"[a-z][a-z0-9+.-]*://[^/?#@\s]+@", re.IGNORECASE)
_WEBHOOK_URL = re.compile(
    r"""https?://(
        hooks\.slack\.com/ | (canary\.|ptb\.)?discord(app)?\.com/api/webhooks/ |
        [a-z0-9.-]*webhook\.office\.com/ | outlook\.office(365)?\.com/webhook |
        hooks\.zapier\.com/ | chat\.googleapis\.com/v1/spaces/ | api\.telegram\.org/bot
    )""",
    re.VERBOSE | re.IGNORECASE,
)
_URL_QUERY_SECRET = re.compile(
    r"[a-z][a-z0-9+.-]*://[^\s]*[?&](access_?token|token|api_?key|key|secret|sig|signature|"
    r"password|auth|code|client_secret)=[^&\s]{6,}", re.IGNORECASE)
COMMAND_DEFAULTS = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
"""Set for every command: nothing may wait for a terminal that is not there."""


def is_secret_variable(name: str, value: str = "") -> bool:
    """Whether a variable looks like it holds a credential, by its name or its value."""
    return bool(_SECRET_NAME.search(name) or is_secret_value(value))


def is_secret_value(value: str) -> bool:
    """Whether a value is a credential whatever its name: a URL with credentials or a token in
    its query, a webhook URL, or a well-known token shape."""
    return any(pattern.search(value) for pattern in (
        _URL_WITH_CREDENTIALS, _WEBHOOK_URL, _URL_QUERY_SECRET, TOKEN_SHAPE))


def scrubbed_environment(environ: Mapping[str, str], passthrough: Iterable[str] = ()
                         ) -> dict[str, str]:
    """`environ` without secret-looking variables (those matching `passthrough` are kept),
    plus `COMMAND_DEFAULTS`."""
    allowed = tuple(passthrough)
    out = {
        name: value for name, value in environ.items()
        if not is_secret_variable(name, value)
        or any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed)
    }
    out.update(COMMAND_DEFAULTS)
    return out

