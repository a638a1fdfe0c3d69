"""The environment a command gets: the user's, minus anything that looks like a credential.

A variable is removed when its name looks like a secret (`*_API_KEY`, `*_TOKEN`, `*SECRET*`,
`*PASSWORD*`, `AWS_*`, `AZURE_*`, `GOOGLE_APPLICATION_CREDENTIALS`, agent sockets, …) or its value
is a URL carrying a password (`postgres://user:pw@host/db`), unless the user lets it through by
name in `env_passthrough` (shell-style patterns allowed: `"NPM_*"`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

_SECRET_NAME = re.compile(
    r"""(
        (^|_)API_?KEYS?($|_) | (^|_)(ACCESS|SECRET|PRIVATE|SIGNING|ENCRYPTION|MASTER|AUTH)_?KEY |
        _KEYS?$ |
        (^|_)(TOKEN|TOKENS)($|_) | TOKEN$ |
        SECRET | PASSWORD | PASSWD | PASSPHRASE | CREDENTIAL | (^|_)PASS($|_) |
        (^|_)AUTH($|_) | AUTHORIZATION | COOKIE | (^|_)PAT($|_) |
        ^AWS_ | ^AZURE_ | ^GOOGLE_APPLICATION_CREDENTIALS$ | ^GCP_SERVICE_ACCOUNT |
        ^SSH_AUTH_SOCK$ | ^GPG_AGENT_INFO$ | ^KRB5CCNAME$ | ^VAULT_ | ^OP_SESSION_
    )""",
    re.VERBOSE | re.IGNORECASE,
)
_URL_WITH_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@", re.IGNORECASE)

COMMAND_DEFAULTS = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
"""Set for every command: nothing may wait for a terminal that is not there."""


def is_secret_variable(name: str, value: str = "") -> bool:
    """Whether a variable looks like it holds a credential, by its name or its value."""
    return bool(_SECRET_NAME.search(name) or _URL_WITH_PASSWORD.match(value.strip()))


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

