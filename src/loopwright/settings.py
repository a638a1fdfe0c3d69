"""What every setting is: its type, its default, its concern and what it does.

The one definition. `Agent(...)` takes the settings as keywords (typed by `AgentOptions`),
`loopwright.toml` as keys and the environment as `LOOPWRIGHT_*` variables (`config.py` reads
and validates those sources); docs/settings.md shows them grouped by concern, in tables that
docs/settings_reference.py writes from the fields below. Adding a setting: one field in
`Settings` (type, default, concern, doc), the same name in `AgentOptions` (tests/test_settings.py
checks), then `python docs/settings_reference.py` (tests/test_docs.py checks).

A plain dataclass: importing this module builds no validator (`config.load_settings` builds
pydantic's on first use).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict


@dataclass(frozen=True)
class AtLeast:
    """A lower bound on a number setting, turned into pydantic's `ge` when a value is first
    validated (pydantic is not imported before then)."""

    ge: int


@dataclass(frozen=True)
class NonEmpty:
    """A text setting that means nothing when empty (a model called "" is no model)."""


@dataclass(frozen=True)
class TextOrPath:
    """A setting given as text or a path (`os.PathLike`), kept as text."""


REVIEW_MODES = ("auto", "all", "off")


class LooseMode:
    """A mode written loosely (`" Auto "`, `"OFF"`, or `[" auto "]`: the environment reads a
    word that is not a mode as a one-item list) is read as the mode before it is validated.
    A marker `config` hands pydantic as it is (its schema hook imports pydantic only then)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_before_validator_function(_as_mode, handler(source))


def _as_mode(value: Any) -> Any:
    word = value[0] if isinstance(value, list) and len(value) == 1 else value
    if isinstance(word, str) and word.strip().lower() in REVIEW_MODES:
        return word.strip().lower()
    return value


PathText = Annotated[str, TextOrPath()]
Name = Annotated[str, NonEmpty()]
Positive = Annotated[int, AtLeast(1)]
Count = Annotated[int, AtLeast(0)]
Seconds = Annotated[float, AtLeast(0)]
ApiMode = Literal["chat_completions", "responses", "anthropic_messages"]
ToolCallFormat = Literal["native", "prompt"]


SIDE_TASKS = ("summary", "grader", "memory", "router")
"""The side tasks that may have a model of their own: `<task>_model`, `<task>_fallbacks`."""


class UsageLimits(TypedDict, total=False):
    """`usage_limits`: bounds for one run (sub-agents have their own); leave out what is not
    limited. `cost` is USD from the price table (a model without a price cannot be held to it)."""

    requests: int
    input_tokens: int
    output_tokens: int
    total_tokens: int
    cost: float


class Concern:
    """What a group of settings is about: one section of docs/settings.md. (A plain class: a
    dataclass would cost every import a generated `__init__`, `__eq__` and `__hash__`.)"""

    __slots__ = ("key", "title")

    def __init__(self, key: str, title: str) -> None:
        self.key = key
        self.title = title

    def __repr__(self) -> str:
        return f"Concern({self.key!r})"


MODEL = Concern("model", "Model and endpoint")
SIDE_MODELS = Concern("side_models", "Side models and routing")
LOOP = Concern("loop", "The loop and its limits")
REVIEW = Concern("review", "The review stage")
OUTPUT = Concern("output", "Answers: grading and structured output")
TOOLS = Concern("tools", "Tools and tool calls")
SAFETY = Concern("safety", "Safety: approvals, rules, paths and the network")
SANDBOX = Concern("sandbox", "The sandbox")
CONTEXT = Concern("context", "Context and recall")
MEMORY = Concern("memory", "Memory and skills")
SESSIONS = Concern("sessions", "Sessions, workspace and files")
CONCERNS = (MODEL, SIDE_MODELS, LOOP, REVIEW, OUTPUT, TOOLS, SAFETY, SANDBOX, CONTEXT, MEMORY,
            SESSIONS)
"""In the order of docs/settings.md."""


def doc(concern: Concern, text: str, *, shown: str | None = None) -> dict[str, Any]:
    """A setting's field metadata: its concern, what it does (its row in docs/settings.md, as
    Markdown) and, where the default is worked out at run time, how the default reads there."""
    return {"concern": concern, "doc": text, "shown": shown}


@dataclass(kw_only=True)
class Settings:
    """All configuration of an agent, after merging every source (validated by pydantic).

    Grouped by concern, in the order of docs/settings.md; each field's metadata (`doc`) says
    what it is about and what it does."""

    model: Name | None = field(default=None, metadata=doc(MODEL,
        "model name, `prefix:name` (`anthropic:`, `openai:`, `openrouter:`, `ollama:`, "
        "`lmstudio:`, `vllm:`, `llamacpp:`) or an alias", shown="auto-detected"))
    base_url: str | None = field(default=None, metadata=doc(MODEL,
        "an OpenAI-compatible URL, with or without `/v1`", shown="from the prefix / env"))
    api_key: str | None = field(default=None, metadata=doc(MODEL,
        "the key; never stored in sessions", shown="from the provider's env variable"))
    api_mode: ApiMode | None = field(default=None, metadata=doc(MODEL,
        "`chat_completions`, `responses` or `anthropic_messages`", shown="resolved"))
    fallbacks: list[Any] = field(default_factory=list, metadata=doc(MODEL,
        "models (strings or tables with their own `base_url`, `api_key`, `api_mode`) tried in "
        "order when the primary fails for good"))
    aliases: dict[str, str] = field(default_factory=dict, metadata=doc(MODEL,
        'short names for models, e.g. `{ fast = "ollama:qwen2.5" }`'))
    reasoning_effort: str | None = field(default=None, metadata=doc(MODEL,
        "`low`, `medium` or `high`, mapped to each API mode's field"))
    temperature: float | None = field(default=None, metadata=doc(MODEL, "sampling temperature"))
    max_tokens: Positive | None = field(default=None, metadata=doc(MODEL,
        "output-token limit per reply (unset: the provider's default; Anthropic, which requires "
        "one, gets 8192 or what the window leaves for the reply, whichever is less); a value "
        "the window cannot hold beside the request is sent as what it leaves, said once a run "
        "in a `context_window` status"))
    context_window: Positive | None = field(default=None, metadata=doc(MODEL,
        "the model's window in tokens: the metadata table for a hosted model it knows (no "
        "request); a local or unknown server is asked (one `GET /models` tells its kind, kept per "
        "base URL and key, then that kind's window endpoint); else a default. A local server "
        "whose window (probed or set) is at most 16,384 tokens gets the compact system prompt "
        "and tool specs (first sentence, no parameter prose), with the working directory, date "
        "and instruction files sent after the tool section (in the first user message of each "
        "request) so its prompt cache is reused across directories", shown="probed"))
    stream: bool = field(default=True, metadata=doc(MODEL,
        "stream replies (text appears as it is written)"))
    stream_idle_timeout: Seconds = field(default=120.0, metadata=doc(MODEL,
        "seconds without a byte before a stream counts as dead (then one plain call)"))
    request_timeout: Seconds = field(default=600.0, metadata=doc(MODEL,
        "seconds for one model request"))
    retry_attempts: Positive = field(default=6, metadata=doc(MODEL,
        "attempts for 429 / 5xx / 529 / connection errors"))
    retry_base_delay: Seconds = field(default=0.5, metadata=doc(MODEL,
        "first back-off in seconds, doubling"))
    retry_max_delay: Seconds = field(default=32.0, metadata=doc(MODEL,
        "longest back-off in seconds"))
    retry_max_pause: Seconds = field(default=60.0, metadata=doc(MODEL,
        "a demanded `Retry-After` longer than this is an error instead of a wait"))

    summary_model: str | dict[str, Any] | None = field(default=None, metadata=doc(SIDE_MODELS,
        "the compaction summary's model: a string or a table with `model`, `base_url`, `api_key`, "
        "`api_mode` (like a fallback)", shown="the main model"))
    summary_fallbacks: list[Any] = field(default_factory=list, metadata=doc(SIDE_MODELS,
        "the summary model's own fallbacks, tried in order"))
    grader_model: str | dict[str, Any] | None = field(default=None, metadata=doc(SIDE_MODELS,
        "the rubric grader's model (string or table)", shown="the main model"))
    grader_fallbacks: list[Any] = field(default_factory=list, metadata=doc(SIDE_MODELS,
        "the grader model's own fallbacks"))
    memory_model: str | dict[str, Any] | None = field(default=None, metadata=doc(SIDE_MODELS,
        "the model that extracts memories at the end of a run (`memory_learning`)",
        shown="the main model"))
    memory_fallbacks: list[Any] = field(default_factory=list, metadata=doc(SIDE_MODELS,
        "the memory model's own fallbacks"))
    router_model: str | dict[str, Any] | None = field(default=None, metadata=doc(SIDE_MODELS,
        "the model the intent router (`router`) asks whether a prompt is trivial",
        shown="the main model"))
    router_fallbacks: list[Any] = field(default_factory=list, metadata=doc(SIDE_MODELS,
        "the router model's own fallbacks"))
    choose_model: Any = field(default=None, metadata=doc(SIDE_MODELS,
        "per-call routing: a function (`Agent(choose_model=…)`, gets a `ChoiceContext`, returns "
        "None, a model or a `ModelChoice(model, enforce=False)`) or a list of rules `{ model, "
        'match, max_prompt_chars, turn, purpose = "turn", enforce = true }`; an enforced choice '
        "sends that call to the model, the run's chain as its fallback "
        "(`loopwright.routing.choose`)"))
    router: bool = field(default=False, metadata=doc(SIDE_MODELS,
        "the intent router: on turn 1 a short `router_model` call decides whether the prompt is "
        "trivial; if so the turn goes out without tool definitions"))

    system_prompt: str | None = field(default=None, metadata=doc(LOOP,
        "replaces the default instructions (project context files are still added)",
        shown="built in"))
    max_turns: Positive = field(default=90, metadata=doc(LOOP,
        "model calls per run; the last one is told to answer without tools"))
    iteration_budget: Positive = field(default=90, metadata=doc(LOOP,
        "model calls shared by a run and all its sub-agents; warning at 70 %"))
    max_auto_continues: Count = field(default=2, metadata=doc(LOOP,
        "a reply cut by the output limit is continued this many times"))
    usage_limits: UsageLimits | None = field(default=None, metadata=doc(LOOP,
        "bounds for one run: a table of `requests`, `input_tokens`, `output_tokens`, "
        "`total_tokens` and `cost` (USD); the run stops with `usage_limit` when one is passed "
        "(the reply that passed it is the last; its tool calls are not run)"))
    raise_on_error: bool = field(default=True, metadata=doc(LOOP,
        "`run()` raises the typed error of a failed run (`ProviderError`, `AuthError`, "
        "`OutputValidationError`, … or `RunFailed` with `.result`); `false` returns a result "
        "with `stop_reason` `error` / `output_invalid` instead (the CLI and `run_batch` do); "
        "`run(..., raise_on_error=)` overrides it per run. Other stops (`max_turns`, "
        "`cancelled`, …) always return"))
    otel: bool = field(default=False, metadata=doc(LOOP,
        "emit OpenTelemetry spans following the GenAI semantic conventions (run → turn → model "
        "call → tool call; retries and fallbacks as span events) through the global tracer "
        "provider; needs `pip install 'loopwright[otel]'`"))

    review: Annotated[Literal["auto", "all", "off"] | list[str], LooseMode()] = field(
        default="auto", metadata=doc(REVIEW,
        "which checks of the review stage run (below): `auto` (the structural ones), `all`, "
        "`off`, or a list of check names (`\"auto\"` in it stands for the structural ones: "
        '`["auto", "narration"]`); checked when the settings are read: a mode in other case or '
        'with spaces (`LOOPWRIGHT_REVIEW=" Auto "`) is that mode, any other value that is not '
        "a mode or a list of checks is an error"))
    review_off: list[str] = field(default_factory=list, metadata=doc(REVIEW,
        "checks turned off by name, in every `review` mode (for an ablation: `review_off = "
        '["narration"]`); a name that is no check is an error when the settings are read'))
    review_budget: Count = field(default=2, metadata=doc(REVIEW,
        "extra model calls the review stage may cause in one run, shared by every check; a "
        "send-back past it is not applied (its `review` event says `applied: false`)"))
    review_checks: list[Any] = field(default_factory=list, metadata=doc(REVIEW,
        "your own checks (`loopwright.review.Check` objects), placed in the table at their "
        "`position`"))
    doom_loop_threshold: Positive = field(default=3, metadata=doc(REVIEW,
        "replies in a row making one identical call: warn; one more: ask for an answer without "
        "tools (calling there stops with `loop_detected`)"))
    max_tool_calls_per_reply: Count = field(default=64, metadata=doc(REVIEW,
        "distinct calls run from one reply; the rest get an error result (0: no limit)"))

    output_mode: Literal["auto", "tool", "native"] = field(default="auto", metadata=doc(OUTPUT,
        "with `output_type=`: `tool` (a `final_result` tool, every provider), `native` (OpenAI's "
        "strict `json_schema` response format) or `auto` (native where the model's profile has "
        "it)"))
    output_retries: Count = field(default=2, metadata=doc(OUTPUT,
        "with `output_type=`: an invalid answer is sent back with the validation errors this many "
        "times, then the run stops (`output_invalid`)"))
    rubric: str | None = field(default=None, metadata=doc(OUTPUT,
        "grading rubric (text or `@file`): the answer is graded before the run finishes"))
    max_rubric_rounds: Count = field(default=2, metadata=doc(OUTPUT,
        "revise rounds the grader may ask for"))

    tool_call_format: ToolCallFormat = field(default="native", metadata=doc(TOOLS,
        "`native` (the API's tool calling) or `prompt` (catalogue in the prompt, `<tool_call>` "
        "blocks)"))
    text_tool_calls: bool = field(default=True, metadata=doc(TOOLS,
        "in native mode, recognise calls a local model wrote as text (never for a frontier model "
        'under `review = "auto"`: a fenced JSON example in its how-to answer is not a call)'))
    allowed_tool_tags: list[str] | None = field(default=None, metadata=doc(TOOLS,
        "on turn 1, offer only tools with these tags (plus core tools)"))
    hidden_tools: list[str] = field(default_factory=list, metadata=doc(TOOLS,
        "tools never offered; a call to one gets an error naming the closest tools"))
    deferred_tools: Literal["auto", "all"] | list[str] | None = field(
        default=None, metadata=doc(TOOLS,
        "`auto`, `all` or a list: tools found through `tool_search` instead of advertised"))
    strict_tools: bool = field(default=False, metadata=doc(TOOLS,
        "OpenAI strict-mode tool schemas"))
    tool_timeout: Seconds | None = field(default=None, metadata=doc(TOOLS,
        "seconds a tool may run (the `bash` tool has its own default)"))
    mcp_servers: dict[str, Any] = field(default_factory=dict, metadata=doc(TOOLS,
        "MCP servers (`command`/`args`/`env` for stdio, `url` for streamable HTTP); tools named "
        "`mcp__SERVER__TOOL`"))

    approve_all: bool = field(default=False, metadata=doc(SAFETY,
        "approve every dangerous call (the catastrophic list is still refused; a network host off "
        "`egress_allow` is still asked about, or refused with nobody to ask); not honoured from "
        "an untrusted project file"))
    approval_ttl: Seconds = field(default=3600.0, metadata=doc(SAFETY,
        'seconds an "always" / "never" answer is remembered'))
    policy: dict[str, Any] = field(default_factory=dict, metadata=doc(SAFETY,
        "per-tool `allow` / `deny` / `ask` rules (regex on parsed shell commands or resolved "
        "paths)"))
    hooks: Any = field(default=None, metadata=doc(SAFETY,
        "Python callables or shell commands run before/after model and tool calls"))
    allowed_roots: list[PathText] = field(default_factory=list, metadata=doc(SAFETY,
        "extra directories the file tools and the sandbox may write"))
    trust_project_files: bool = field(default=False, metadata=doc(SAFETY,
        "load the workdir's instruction files (`AGENTS.md`…) and skills without `loopwright "
        "trust`: for a workdir you made yourself (a library harness, a test); a project's own "
        "file cannot set it"))
    egress_allow: list[str] = field(default_factory=list, metadata=doc(SAFETY,
        "hosts that tools reaching the network (`web_fetch`, tools declaring `network=True`, MCP "
        'tools) may reach without asking: `"docs.python.org"`, `"*.python.org"` (subdomains), an '
        'IP address, or `"*"`; any other host is asked about once per session with the full URL, '
        "and refused when nobody can answer (`--yes` does not answer it); a project's list needs "
        "`loopwright trust`"))
    web_allow_private: bool | list[str] = field(default=False, metadata=doc(SAFETY,
        "`web_fetch` may reach loopback / private / link-local addresses: `true`, or a list of "
        'addresses and networks (`["127.0.0.1", "10.0.0.0/8"]`); metadata endpoints stay refused'))

    sandbox_mode: str = field(default="workspace-write", metadata=doc(SANDBOX,
        "`read-only`, `workspace-write` or `full-access` (no sandbox)"))
    sandbox_network: bool = field(default=False, metadata=doc(SANDBOX,
        "commands may use the network"))
    env_passthrough: list[str] = field(default_factory=list, metadata=doc(SANDBOX,
        "secret-looking environment variables commands may still see"))
    sandbox_bwrap: str = field(default="bwrap", metadata=doc(SANDBOX,
        "the bubblewrap binary (a name on `PATH` or a path)"))
    sandbox_max_processes: Count = field(default=1024, metadata=doc(SANDBOX,
        "processes and threads one sandboxed command may have; reaching it stops the command (0: "
        "no limit)"))
    sandbox_max_file_mb: Count = field(default=4096, metadata=doc(SANDBOX,
        "MiB any one file a sandboxed command writes may reach (0: no limit)"))
    sandbox_max_memory_mb: Count = field(default=16384, metadata=doc(SANDBOX,
        "MiB of address space per sandboxed process (0: no limit); Chromium needs about 1 TiB (V8 "
        "reserves it), WebAssembly in Node over 8 GiB"))
    sandbox_tmp_mb: Count = field(default=1024, metadata=doc(SANDBOX,
        "MiB of the sandbox's private `/tmp` (0: the kernel's default, half the RAM)"))
    sandbox_min_free_mb: Count = field(default=1024, metadata=doc(SANDBOX,
        "MiB a sandboxed command must leave free on each writable root's disk (half of what is "
        "free if that is less at its start); below it the command is stopped (0: no floor)"))

    reminders: bool = field(default=True, metadata=doc(CONTEXT,
        "ephemeral runtime notes on requests (changed files, todo list)"))
    compaction: bool = field(default=True, metadata=doc(CONTEXT,
        "prune stale tool output, then summarise earlier turns when the window fills"))
    summary_cooldown: Seconds = field(default=300.0, metadata=doc(CONTEXT,
        "seconds a summary model that failed is not asked again; compaction uses the report built "
        "from the record meanwhile (`0` asks every time)", shown="`300`"))
    recall: bool = field(default=False, metadata=doc(CONTEXT,
        "at run start, recall matching past sessions into the first request"))
    recall_limit: Count = field(default=3, metadata=doc(CONTEXT, "past sessions recalled"))
    embeddings_url: str | None = field(default=None, metadata=doc(CONTEXT,
        "an OpenAI-compatible server with `/v1/embeddings` (llama.cpp with an embedding GGUF, "
        "vLLM, Ollama, OpenAI): recall ranks by meaning, over the full-text hits and the opening "
        "requests of the 50 newest sessions; if it fails, full-text ranking"))
    embeddings_model: str | None = field(default=None, metadata=doc(CONTEXT,
        "the model named in embeddings requests (`default` when unset)"))
    embeddings_api_key: str | None = field(default=None, metadata=doc(CONTEXT,
        "the key for `embeddings_url`"))

    memory: bool = field(default=False, metadata=doc(MEMORY,
        "the `memory` tool and its prompt section (MEMORY.md / USER.md)"))
    memory_dir: PathText | None = field(default=None, metadata=doc(MEMORY,
        "where memory files live; by default one directory per project (the workdir's repository, "
        "else the workdir), so what was written in one project never reaches another's prompt; "
        "relative paths are inside the workdir; an absolute path shares one memory everywhere",
        shown="`<data_dir>/memory/projects/<project>-<hash>`"))
    memory_limit: Positive = field(default=2200, metadata=doc(MEMORY, "characters of MEMORY.md"))
    user_limit: Positive = field(default=1375, metadata=doc(MEMORY, "characters of USER.md"))
    memory_learning: bool = field(default=False, metadata=doc(MEMORY,
        "when a run completes, a side call on `memory_model` saves durable facts (MEMORY.md) and "
        "preferences (USER.md), tagged with the session, deduplicated, within the limits; runs "
        "after the answer, awaited by `Agent.aclose()` / the CLI before exit; shown in later "
        "prompts as background to verify"))
    skills: bool = field(default=True, metadata=doc(MEMORY,
        "offer the skills found (SKILL.md folders): names and descriptions in the static prompt, "
        "the `skill` tool loads one"))
    skill_paths: list[PathText] = field(default_factory=list, metadata=doc(MEMORY,
        "more directories of skill folders, after the project's `.loopwright/skills`, "
        "`.claude/skills`, `.agents/skills` and before `~/.config/loopwright/skills`; the file "
        "tools may read them (never write); a project file needs trust to set it"))

    session_id: str | None = field(default=None, metadata=doc(SESSIONS,
        "the conversation to continue or start; always the newest state of it", shown="new"))
    store: Any = field(default=None, metadata=doc(SESSIONS,
        "session store: a path to a SQLite file, a `postgresql://` URL, or a store object",
        shown="`None` (library), SQLite (CLI)"))
    workdir: PathText | None = field(default=None, metadata=doc(SESSIONS,
        "the workspace the built-in tools work in", shown="current directory"))
    cache_dir: PathText | None = field(default=None, metadata=doc(SESSIONS,
        "spilled tool outputs and other cache", shown="`~/.cache/loopwright`"))
    data_dir: PathText | None = field(default=None, metadata=doc(SESSIONS,
        "the session database and memory", shown="`~/.local/share/loopwright`"))

    def __post_init__(self) -> None:
        if isinstance(self.review, list):  # a mode is a checked Literal already
            self.review = review_value(self.review, self.review_checks)
        if self.review_off:
            self.review_off = review_value(self.review_off, self.review_checks,
                                           setting="review_off")


class AgentOptions(TypedDict, total=False):
    """The settings as `Agent(...)` keyword arguments (typed for IDEs and mypy); the same names
    as `Settings`, in its order, whose defaults and docs apply."""

    model: str | None
    base_url: str | None
    api_key: str | None
    api_mode: ApiMode | None
    fallbacks: list[Any]
    aliases: dict[str, str]
    reasoning_effort: str | None
    temperature: float | None
    max_tokens: int | None
    context_window: int | None
    stream: bool
    stream_idle_timeout: float
    request_timeout: float
    retry_attempts: int
    retry_base_delay: float
    retry_max_delay: float
    retry_max_pause: float

    summary_model: str | dict[str, Any] | None
    summary_fallbacks: list[Any]
    grader_model: str | dict[str, Any] | None
    grader_fallbacks: list[Any]
    memory_model: str | dict[str, Any] | None
    memory_fallbacks: list[Any]
    router_model: str | dict[str, Any] | None
    router_fallbacks: list[Any]
    choose_model: Any
    router: bool

    system_prompt: str | None
    max_turns: int
    iteration_budget: int
    max_auto_continues: int
    usage_limits: UsageLimits | None
    raise_on_error: bool
    otel: bool

    review: Literal["auto", "all", "off"] | list[str]
    review_off: list[str]
    review_budget: int
    review_checks: list[Any]
    doom_loop_threshold: int
    max_tool_calls_per_reply: int

    output_mode: Literal["auto", "tool", "native"]
    output_retries: int
    rubric: str | None
    max_rubric_rounds: int

    tool_call_format: ToolCallFormat
    text_tool_calls: bool
    allowed_tool_tags: list[str] | None
    hidden_tools: list[str]
    deferred_tools: Literal["auto", "all"] | list[str] | None
    strict_tools: bool
    tool_timeout: float | None
    mcp_servers: dict[str, Any]

    approve_all: bool
    approval_ttl: float
    policy: dict[str, Any]
    hooks: Any
    allowed_roots: list[str | os.PathLike[str]]
    trust_project_files: bool
    egress_allow: list[str]
    web_allow_private: bool | list[str]

    sandbox_mode: str
    sandbox_network: bool
    env_passthrough: list[str]
    sandbox_bwrap: str
    sandbox_max_processes: int
    sandbox_max_file_mb: int
    sandbox_max_memory_mb: int
    sandbox_tmp_mb: int
    sandbox_min_free_mb: int

    reminders: bool
    compaction: bool
    summary_cooldown: float
    recall: bool
    recall_limit: int
    embeddings_url: str | None
    embeddings_model: str | None
    embeddings_api_key: str | None

    memory: bool
    memory_dir: str | os.PathLike[str] | None
    memory_limit: int
    user_limit: int
    memory_learning: bool
    skills: bool
    skill_paths: list[str | os.PathLike[str]]

    session_id: str | None
    store: Any
    workdir: str | os.PathLike[str] | None
    cache_dir: str | os.PathLike[str] | None
    data_dir: str | os.PathLike[str] | None

FIELD_NAMES = frozenset(f.name for f in fields(Settings))
CONCERN_OF: dict[str, Concern] = {f.name: f.metadata["concern"] for f in fields(Settings)}
"""Each setting's concern, by name."""
DEFAULTS = Settings()  # read-only: the one place code outside this module takes a default from


def review_value(names: list[str], user_checks: list[Any], *, setting: str = "review"
                 ) -> list[str]:
    """`review` given as a list (or `review_off`), checked when the settings are read (not when a
    run starts): each item names a check of the table (built-in, or one of `review_checks`) or,
    in `review`, is "auto"."""
    from loopwright.errors import ConfigError
    from loopwright.review.names import CHECK_NAMES  # only for a list

    cleaned = [name.strip() if isinstance(name, str) else name for name in names]
    named = (getattr(check, "name", None) for check in user_checks)
    checks = {*CHECK_NAMES, *(name for name in named if isinstance(name, str))}
    allowed = checks if setting == "review_off" else {*checks, "auto"}
    wrong = ", ".join(repr(name) for name in cleaned if name not in allowed)
    if wrong and setting == "review_off":
        raise ConfigError(f"review_off = {names!r}: {wrong} is not a check; review_off names "
                          f"checks from {', '.join(sorted(checks))}")
    if wrong:
        raise ConfigError(
            f"review = {names!r}: {wrong} is not a mode or a check; review is 'auto', 'all', "
            f"'off' or a list of checks from {', '.join(sorted(checks))} (\"auto\" in a list "
            "stands for the structural ones)")
    return cleaned


def default_data_dir() -> Path:
    """`data_dir` when it is not set: the session database and memory."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "loopwright"


def default_cache_dir() -> Path:
    """`cache_dir` when it is not set: spilled tool outputs, downloaded weights."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "loopwright"
