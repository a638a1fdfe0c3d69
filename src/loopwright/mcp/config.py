"""MCP server configuration: the `mcp_servers` setting, checked and normalised.

```toml
[mcp_servers.files]                       # stdio: loopwright starts the server as a subprocess
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
env = { LOG_LEVEL = "warn" }

[mcp_servers.search]                      # streamable HTTP: the server is already running
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${SEARCH_TOKEN}" }
call_timeout = 30
```

`${VAR}` in `command`, `args`, `env`, `url` and `headers` is replaced from loopwright's own
environment when the config is read, so secrets stay out of config files: the server gets the
variables named, no others (a stdio server's environment is otherwise the SDK's short list,
`PATH`, `HOME`, …). A project's `mcp_servers` are read only once the project is trusted.

A server's tool annotations are its own claims: `trust_annotations = true` lets
`readOnlyHint` and `openWorldHint: false` lower a guard (see `client.MCPManager`); off, they
lower none. `max_message_mb` bounds one message from the server (see `stdio`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopwright.errors import ConfigError

_KNOWN_KEYS = frozenset({
    "command", "args", "env", "cwd", "url", "headers", "connect_timeout", "call_timeout",
    "enabled", "tools", "max_restarts", "trust_annotations", "max_message_mb",
})
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME = 64  # OpenAI's and Anthropic's limit on a tool's name


@dataclass(kw_only=True)
class MCPServerConfig:
    """One MCP server: either a `command` to run over stdio or a `url` for streamable HTTP."""

    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    connect_timeout: float = 30.0
    call_timeout: float = 120.0
    enabled: bool = True
    tools: list[str] | None = None  # only register these server tools (by their MCP name)
    max_restarts: int = 1  # a crashed server is restarted this many times, then reported down
    # MCP's spec: annotations are untrusted unless the server is; the user says which one is
    trust_annotations: bool = False
    # one JSON-RPC message, in MB: a 12 MB file or image as base64 fits, and reading one
    # costs a few times that in memory, not the ~4x a 100 MB line cost under `call_timeout`
    max_message_mb: float = 16.0

    @property
    def max_message_bytes(self) -> int:
        return int(self.max_message_mb * 1024 * 1024)

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"

    @property
    def target(self) -> str:
        """What the server is, for people: the command line or the URL."""
        if self.command:
            return " ".join([self.command, *self.args])
        return self.url or ""


def parse_servers(raw: Mapping[str, Any] | None) -> list[MCPServerConfig]:
    """Configs from the `mcp_servers` table; a malformed entry raises `ConfigError`."""
    if not raw:
        return []
    if not isinstance(raw, Mapping):
        raise ConfigError("mcp_servers must be a table of server name → {command, args, env} or "
                          "{url, headers}")
    return [parse_server(str(name), entry) for name, entry in raw.items()]


def parse_server(name: str, entry: Any) -> MCPServerConfig:
    """One server entry (a `MCPServerConfig` is accepted as is)."""
    if isinstance(entry, MCPServerConfig):
        return entry
    where = f"mcp_servers.{name}"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a table with either 'command' or 'url'")
    unknown = sorted(set(entry) - _KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; "
                          f"known keys are {', '.join(sorted(_KNOWN_KEYS))}")
    command, url = entry.get("command"), entry.get("url")
    if bool(command) == bool(url):
        raise ConfigError(f"{where} needs exactly one of 'command' (stdio) or 'url' (HTTP)")
    return MCPServerConfig(
        name=name,
        command=_expand(_text(command, where, "command")) if command else None,
        args=[_expand(a) for a in _string_list(entry.get("args", []), where, "args")],
        env={k: _expand(v) for k, v in _string_map(entry.get("env", {}), where, "env").items()},
        cwd=_text(entry["cwd"], where, "cwd") if entry.get("cwd") else None,
        url=_expand(_text(url, where, "url")) if url else None,
        headers={k: _expand(v)
                 for k, v in _string_map(entry.get("headers", {}), where, "headers").items()},
        connect_timeout=_positive(entry.get("connect_timeout", MCPServerConfig.connect_timeout),
                                  where, "connect_timeout"),
        call_timeout=_positive(entry.get("call_timeout", MCPServerConfig.call_timeout), where,
                               "call_timeout"),
        enabled=bool(entry.get("enabled", MCPServerConfig.enabled)),
        tools=_string_list(entry["tools"], where, "tools") if "tools" in entry else None,
        max_restarts=int(entry.get("max_restarts", MCPServerConfig.max_restarts)),
        trust_annotations=_flag(entry.get("trust_annotations", False), where,
                                "trust_annotations"),
        max_message_mb=_positive(entry.get("max_message_mb", MCPServerConfig.max_message_mb),
                                 where, "max_message_mb", unit="megabytes"),
    )


def tool_name(server: str, tool: str) -> str:
    """The name the model sees: `mcp__{server}__{tool}`, limited to what every provider accepts
    (letters, digits, `_`, `-`; at most 64 characters). A name that had to be changed to fit
    ends with a digest of the server's and the tool's own names, so two tools that would read
    the same after it (`get.user` and `get_user`, or two long names alike in their first 64
    characters) stay two tools. So does a server name the `__` after it cannot be told apart
    from (`a__b` or `a_`): otherwise server `a`'s tool `b__c` would take the name of server
    `a__b`'s tool `c`, and whichever server connected first would answer the other's calls."""
    name = f"mcp__{_SAFE_NAME.sub('_', server)}__{_SAFE_NAME.sub('_', tool)}"
    separable = "__" not in server and not server.endswith("_")
    if separable and name == f"mcp__{server}__{tool}" and len(name) <= MAX_TOOL_NAME:
        return name
    digest = hashlib.blake2b(f"{server}\0{tool}".encode(errors="surrogatepass"),
                             digest_size=4).hexdigest()
    return f"{name[:MAX_TOOL_NAME - len(digest) - 1]}_{digest}"


def _expand(value: str) -> str:
    return _VAR.sub(lambda m: os.environ.get(m.group(1), ""), value)


def _text(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}.{key} must be a string, not {type(value).__name__}")
    return value


def _string_list(value: Any, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}.{key} must be a list of strings")
    return list(value)


def _string_map(value: Any, where: str, key: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}.{key} must be a table of strings")
    return {str(k): str(v) for k, v in value.items()}


def _flag(value: Any, where: str, key: str) -> bool:
    # not bool(): the string "false" from an env-var JSON would read as true
    if not isinstance(value, bool):
        raise ConfigError(f"{where}.{key} must be true or false, not {value!r}")
    return value


def _positive(value: Any, where: str, key: str, *, unit: str = "seconds") -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if number <= 0:
        raise ConfigError(f"{where}.{key} must be a positive number of {unit}, not {value!r}")
    return number
