"""`Agent`: a reusable, concurrency-safe configuration; each run has its own history and budget."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import functools
import os
import typing
import uuid
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Self, Unpack

from loopwright import agent_parts
from loopwright.builtin.delegate import DEFAULT_TIMEOUT as DELEGATION_TIMEOUT
from loopwright.errors import ConfigError, LoopwrightError
from loopwright.result import OutputT, RunResult, raise_for_failure, raise_unless_answered
from loopwright.tools.base import DepsT, Tool

if TYPE_CHECKING:
    import httpx

    from loopwright.attachments import Attachment
    from loopwright.budget import IterationBudget
    from loopwright.builtin.delegate import DelegationResult
    from loopwright.builtin.questions import ClarifyCallback
    from loopwright.context.summary import SummaryCooldown
    from loopwright.endpoints.fallback import CredentialRefresher, ProviderChain
    from loopwright.endpoints.probe import WindowInfo
    from loopwright.endpoints.resolve import Resolved
    from loopwright.endpoints.retry import RetryPolicy
    from loopwright.events import Event
    from loopwright.messages import Message
    from loopwright.plugins import LoopPlugin
    from loopwright.run_state import LoopSettings, RunState
    from loopwright.safety.policy import ApprovalCallback
    from loopwright.safety.sandbox import SandboxPolicy
    from loopwright.settings import AgentOptions, Settings

# Imported where first used, not here, so that `from loopwright import Agent` stays cheap and an
# agent that does not use a part never loads it (tests/test_startup.py): the runtime (settings,
# endpoints, the loop, hooks, the tool executor: by the first `Agent` made or run), MCP,
# compaction and the context layers, grading, the tool policy (with its shell parser), safety
# layers, the text tool-call formats, the sandbox, skills, memory, routing and the window probes.

EventCallback = Callable[["Event"], None]
# runtime aliases (pdoc evaluates them) whose parts load with the runtime: forward references
Prompt = str | Sequence[typing.Union[str, "Attachment"]]  # text, or text parts and images / PDFs


class RunHandle(Generic[OutputT]):
    """A live run: await it for the `RunResult`; `steer()` and `cancel()` address this run only."""

    def __init__(self, state: RunState, task: asyncio.Task[RunResult[OutputT]]) -> None:
        self.state = state
        self.task = task

    @property
    def run_id(self) -> str:
        """This run's id (in its events and in the store)."""
        return self.state.run_id

    @property
    def session_id(self) -> str | None:
        """The session the run records into and resumes from."""
        return self.state.session_id

    def steer(self, text: str) -> bool:
        """Add `text` as a user message at the run's next turn. False if it has ended."""
        if self.task.done():
            return False
        self.state.steer(text)
        return True

    def cancel(self) -> bool:
        """Stop the run (it ends with `cancelled`). False if it has already ended."""
        if self.task.done():
            return False
        self.state.cancel()
        return True

    def __await__(self) -> Generator[Any, None, RunResult[OutputT]]:
        return self.task.__await__()


class Agent(Generic[DepsT, OutputT]):
    """An agent: model, tools and guards; the settings are keyword arguments (docs/settings.md).

    `Agent[Deps, Output]`: `output_type=` makes `run()`'s `result.output` an `Output` (validated;
    see `loopwright.output`), and `run(..., deps=)` hands a `Deps` to tools as `ctx.deps`."""

    def __init__(
        self,
        model: str | None = None,
        /,
        *,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        callbacks: Iterable[EventCallback] = (),
        plugins: Iterable[LoopPlugin] = (),
        approval: ApprovalCallback | None = None,
        clarify: ClarifyCallback | None = None,
        retry: RetryPolicy | None = None,
        refresh_credentials: CredentialRefresher | None = None,
        output_type: type[OutputT] | None = None,
        http_client: httpx.AsyncClient | None = None,
        **options: Unpack[AgentOptions],
    ) -> None:
        """`options`: every setting in docs/settings.md, typed by `AgentOptions` and validated
        here (a bad name or value raises `ConfigError`). `output_type`: a pydantic model,
        dataclass, TypedDict, primitive, list or union the answer must validate as (annotate
        `agent: Agent[Deps, Output]` to type `deps=` as well). `http_client`: your own client
        for the model requests (its proxies, certificates, limits); the agent never closes
        it."""
        from loopwright.config import load_settings
        from loopwright.endpoints.providers import AgentProviders
        from loopwright.endpoints.retry import RetryPolicy
        from loopwright.hooks import EventHooks, Hooks
        from loopwright.store.services import StateServices
        from loopwright.tools.registry import ToolRegistry

        self.settings: Settings = load_settings({"model": model, **options})
        self.output_type = output_type
        self.http_client = http_client
        self._output = agent_parts.output_spec(output_type)
        agent_parts.place_review_checks(self.settings)
        self.registry = ToolRegistry(tools, hidden=self.settings.hidden_tools)
        self.state_services = StateServices(self.settings)  # sessions, memory, recall (§8)
        self.skills = agent_parts.skills(self.settings, self.state_services.workdir)
        for extra in [*self.state_services.tools(), *(self.skills.tools() if self.skills else [])]:
            self.registry.add(extra)
        self.callbacks = list(callbacks)
        if self.settings.otel:
            self.callbacks.append(agent_parts.otel_tracer())
        self.plugins = [*agent_parts.router_plugins(self.settings), *plugins,
                        *(self.skills.plugins() if self.skills else [])]
        self.mcp = agent_parts.mcp_manager(self.settings)  # None without mcp_servers
        if self.mcp is not None:  # connects when the first run starts; tools join the registry
            from loopwright.mcp.client import MCPToolsPlugin

            self.plugins.insert(0, MCPToolsPlugin(self.mcp, self.registry))
        if self.settings.rubric:
            from loopwright.grading import RubricGrader, load_rubric

            self.plugins.append(RubricGrader(load_rubric(self.settings.rubric),
                                             max_rounds=self.settings.max_rubric_rounds))
        self.approval = approval
        self.clarify = clarify
        self.hooks = Hooks.from_config(self.settings.hooks)  # bad hooks / policy fail here
        from loopwright.safety.policy import ApprovalCache, Policy

        self.policy = Policy.from_config(self.settings.policy)
        self._sandbox: SandboxPolicy | None = None
        if agent_parts.sandbox_configured(self.settings) or self._runs_commands():
            self._sandbox = self.sandbox  # a bad mode fails here
        self._sandbox_note: str | None = None  # told to the model when a tool runs commands
        self._approvals = ApprovalCache(ttl=self.settings.approval_ttl)
        if self.hooks.on_event:
            self.callbacks.append(EventHooks(self.hooks, self.settings.workdir))
        self.retry = retry or RetryPolicy(
            attempts=self.settings.retry_attempts, base_delay=self.settings.retry_base_delay,
            max_delay=self.settings.retry_max_delay, max_pause=self.settings.retry_max_pause)
        self.refresh_credentials = refresh_credentials
        self._providers = AgentProviders(self.settings, retry=self.retry,
                                         refresh_credentials=refresh_credentials,
                                         http_client=http_client)
        self._live: set[RunHandle[OutputT]] = set()
        self._summary_cooldown: SummaryCooldown | None = None  # made with the first run
        self._side_models = agent_parts.side_models(self.settings)  # bad side models fail here
        self._chooser = agent_parts.chooser(self.settings.choose_model)  # and bad rules
        # what a host lends every tool call by name (an editor's buffers: builtin/editor.py)
        self.services: dict[str, Any] = {}

    @property
    def sandbox(self) -> SandboxPolicy:
        """The OS sandbox commands of the built-in tools run in (from the settings)."""
        if self._sandbox is None:
            from loopwright.safety.sandbox import policy_from_settings

            self._sandbox = policy_from_settings(self.settings)
        return self._sandbox

    def _runs_commands(self) -> bool:
        return any("shell" in tool.tags for tool in self.registry)

    # -- public API --

    async def run(self, prompt: Prompt, *, history: list[Message] | None = None,
                  deps: DepsT | None = None, raise_on_error: bool | None = None,
                  workdir: str | Path | None = None, project: bool = True
                  ) -> RunResult[OutputT]:
        """Run to the end and return the result. Provider failures and invalid structured output
        end the run (`RunResult.stop_reason`, `.error`) unless `raise_on_error` (default: the
        setting) asks to raise them: the typed error itself (`AuthError`,
        `OutputValidationError`, …) or `RunFailed`. `workdir`, `project`: see `start()`."""
        handle = await self.start(prompt, history=history, deps=deps, workdir=workdir,
                                  project=project)
        result = await handle
        if raise_on_error if raise_on_error is not None else self.settings.raise_on_error:
            raise_for_failure(result)
        return result

    def chat(self, prompt: Prompt, *, deps: DepsT | None = None) -> OutputT:
        """Synchronous convenience: run and return the answer. A run that ended without one
        raises: its typed error (`ProviderError`, `UsageLimitExceeded`, …), else `RunFailed`
        (`max_turns`, `cancelled`, `refused`, …) whose `.result` is the `RunResult`.
        Each call runs on an event loop of its own — inside a running one (Jupyter, an async
        framework) on a private thread, this call blocking until the run ends — so an agent
        given its own `http_client` (bound to one loop) raises `ConfigError` here.
        Interrupted (Ctrl-C: a `KeyboardInterrupt`, or the calling task cancelled), it cancels
        the run and raises once the run has stopped."""
        if self.http_client is not None:  # its connections outlive each call's event loop
            raise ConfigError("chat() runs each call on an event loop of its own, and the "
                              "http_client given to this agent belongs to one loop (a second "
                              "call would find its connections on a closed one): await "
                              "agent.run(...) in your own event loop instead")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            result = asyncio.run(self._run_and_close(prompt, deps))
        else:
            result = agent_parts.beside_the_running_loop(self._run_and_close(prompt, deps))
        raise_unless_answered(result)
        return result.output

    async def stream(self, prompt: Prompt, *, history: list[Message] | None = None,
                     deps: DepsT | None = None) -> AsyncGenerator[Event, None]:
        """Run and yield every event as it happens, ending with the terminal one.

        Closing the iterator early (`async with contextlib.aclosing(agent.stream(...))`, or
        when it is garbage-collected) cancels the run."""
        from loopwright.events import TERMINAL_TYPES

        queue: asyncio.Queue[Event] = asyncio.Queue()
        handle = await self.start(prompt, history=history, extra_callback=queue.put_nowait,
                                  deps=deps)
        try:
            while True:
                event = await queue.get()
                yield event
                if event.type in TERMINAL_TYPES and not event.agent:
                    break
        finally:
            if not handle.task.done():
                handle.cancel()
                with contextlib.suppress(asyncio.CancelledError, LoopwrightError):
                    await handle.task

    async def start(self, prompt: Prompt, *, history: list[Message] | None = None,
                    extra_callback: EventCallback | None = None,
                    budget: IterationBudget | None = None, agent_tag: str = "",
                    parent_session_id: str | None = None,
                    session_id: str | None = None, deps: Any = None,
                    workdir: str | Path | None = None, project: bool = True
                    ) -> RunHandle[OutputT]:
        """Start a run in the background and return its handle (`parent_session_id`: the
        session of the run that delegated this one, linked in the store; `session_id`: the
        session to continue or create, instead of the agent's `session_id` setting; `workdir`:
        this run's working directory instead of the `workdir` setting — its instruction files,
        the tools' workspace — so one agent serves runs in many directories, as
        `loopwright batch` does; `project=False`: that directory is a scratch one of the
        caller's, not a project — no repository, instruction file or trust of a project is
        looked for in it or above it). `prompt` is text, or a list of text and attachments
        (`loopwright.image(...)`, `document(...)`)."""
        from loopwright import messages
        from loopwright.attachments import refuse_unsupported, split_prompt
        from loopwright.budget import IterationBudget
        from loopwright.config import check_model_prefix
        from loopwright.endpoints.base import hold_shared_client
        from loopwright.loop import drive
        from loopwright.run_state import RunState
        from loopwright.store.services import first_user_turn
        from loopwright.worker_threads import run_in_thread

        prompt, attachments = split_prompt(prompt)
        if self._providers.resolved is None:  # a misspelt provider: before any request
            check_model_prefix(self.settings.model, self.settings.base_url,
                               aliases=self.settings.aliases)
        chain = await self._providers.chain()
        if attachments:  # a clear error now, rather than the provider's after the request
            refuse_unsupported(chain.current.profile.supports_images, chain.model,
                               [messages.user("", attachments)])
        hold_shared_client(self)  # until aclose(), or until this event loop ends
        callbacks = [*self.callbacks, *([extra_callback] if extra_callback else [])]
        emit = _fan_out(callbacks)
        new_session = not (session_id or self.settings.session_id)  # an id made up here
        # as long as a uuid4's hex, with no `UUID` object made for it
        session_id = session_id or self.settings.session_id or os.urandom(16).hex()
        from loopwright.context.economy import small_window

        compact = small_window(self.windows, chain)
        await self._prepare_sandbox_note(compact=compact)
        # the workdir's path, instruction files, memory and skills are read from disk: not on
        # the event loop (on a tools' worker thread: a cheaper hop than `asyncio.to_thread`'s)
        where, system_prompt = await run_in_thread(functools.partial(
            self._where_and_prompt, workdir if workdir is not None else self.settings.workdir,
            compact, project))
        settings = self._loop_settings(chain, session_id, where, project=project)
        run_history = await self._open_history(
            chain, session_id, parent_session_id, history, system_prompt, prompt,
            settings=settings, callbacks=callbacks, agent_tag=agent_tag, new=new_session)
        state = RunState(
            settings=settings,
            history=run_history,
            emit=emit,
            budget=budget or IterationBudget(total=self.settings.iteration_budget),
            session_id=session_id,
            agent_tag=agent_tag,
            listeners=callbacks,
        )
        state.deps = deps
        state.begin(messages.user(prompt, attachments) if attachments
                    else first_user_turn(run_history, prompt))
        task = typing.cast("asyncio.Task[RunResult[OutputT]]", asyncio.ensure_future(drive(state)))
        handle = RunHandle(state, task)
        self._live.add(handle)
        task.add_done_callback(lambda _: self._live.discard(handle))
        return handle

    async def _open_history(self, chain: ProviderChain, session_id: str,
                            parent_session_id: str | None, history: list[Message] | None,
                            system_prompt: str, prompt: str, *, settings: LoopSettings,
                            callbacks: list[EventCallback], agent_tag: str,
                            new: bool = False) -> list[Message]:
        """The run's starting history: with a store, recorded (a stored session resumed when no
        history is given; `new`: no session has the id yet), the recorder its last plugin; else
        the history given under the system prompt; a stored attachment gone, a note either way."""
        from loopwright import messages
        from loopwright.events import StatusEvent
        from loopwright.store.read_back import sendable_history

        primary = (await self._providers.resolve())[0]
        recorder = self.state_services.recorder(
            session_id, model=chain.model, base_url=primary.endpoint.shown_url,
            api_mode=primary.mode, parent_id=parent_session_id)
        if recorder is None:
            run_history = list(history or [])
            if not run_history or run_history[0].role != "system":
                run_history.insert(0, messages.system(system_prompt))
            return await sendable_history(session_id, run_history)
        emit = _fan_out(callbacks)
        run_history = await recorder.open(
            history, system_prompt=system_prompt, prompt=prompt, new=new,
            on_busy=lambda text: emit(StatusEvent(kind="store_busy", message=text,
                                                  agent=agent_tag)))
        settings.plugins.append(recorder)
        settings.executor.gates.insert(0, recorder.before_tool)
        callbacks.append(recorder)
        return await sendable_history(session_id, run_history)

    @property
    def live_runs(self) -> int:
        """How many runs started with `start()` are still going."""
        return len(self._live)

    def steer(self, text: str) -> bool:
        """Add a user message to every live run at its next turn. True if a run was live."""
        return any([handle.steer(text) for handle in list(self._live)])

    def cancel(self) -> bool:
        """Cancel every live run. True if a run was live."""
        return any([handle.cancel() for handle in list(self._live)])

    async def delegate(self, task: str, *, tools: list[str] | None = None,
                       model: str | None = None, instructions: str | None = None,
                       timeout: float | None = DELEGATION_TIMEOUT) -> DelegationResult:
        """Run `task` in a sub-agent with a subset of this agent's tools (by name; default all)
        and optionally another model; see `loopwright.builtin.delegate`."""
        from loopwright.builtin.delegate import delegate

        return await delegate(self, task, tools=tools, model=model, instructions=instructions,
                              timeout=timeout)

    def make_child(self, *, tools: Iterable[Tool], system_prompt: str,
                   model: str | None = None) -> Agent:
        """A sub-agent of this agent (what `delegate` runs): this agent's settings, approval,
        retry policy and credential refresher, except its own system prompt, exactly `tools`
        (its other tools hidden) and optionally another model; a session of its own in this
        agent's store (fresh, unless a run names one: `delegate` continues the child session of
        a call made again after a crash); no rubric and no MCP servers of its own (it may be
        given this agent's MCP tools). On the same model it reuses this agent's resolved
        endpoints and windows."""
        from loopwright.endpoints.resolve import split_model

        s = self.settings
        options = {f.name: copy.copy(getattr(s, f.name)) for f in dataclasses.fields(s)}
        # the store object itself (False without one), so the child's session is saved beside
        # this one; "" / {} because None would fall back to loopwright.toml
        options.update(system_prompt=system_prompt, session_id=uuid.uuid4().hex, rubric="",
                       mcp_servers={}, hidden_tools=[], store=self.state_services.store or False,
                       otel=False)  # its events reach this agent's tracer, nested there
        if model:
            options["model"] = model
            if model in s.aliases or split_model(s.aliases.get(model, model))[0] is not None:
                options.update(base_url=None, api_key=None, api_mode=None)  # not our server
        child = Agent(approval=self.approval, retry=self.retry,
                      refresh_credentials=self.refresh_credentials, **options)
        wanted = list(tools)
        for item in wanted:  # the child may have built some of these itself (memory tools…)
            if item.name not in child.registry:
                child.registry.add(item)
        names = {t.name for t in wanted}
        child.registry.hidden.update(n for n in child.registry.names if n not in names)
        if not model:  # same model: no second resolution or window probe
            child._providers.adopt(self._providers)
        return child

    async def aclose(self) -> None:
        """Let work after the answer finish (memory learning), then release what the agent
        holds open: MCP server connections, this event loop's HTTP client (unless another
        agent still uses it) and the session store it opened from a path or URL (one passed
        as an object is yours to close); all reopen on the next run. `async with Agent(...) as
        agent:` calls it on exit."""
        from loopwright.endpoints.base import release_shared_client

        try:
            await self.state_services.wait()  # memory learning after the answer
            if self.mcp is not None:
                await self.mcp.aclose()
        finally:
            await release_shared_client(self)
            await self.state_services.close_store()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- building blocks --

    async def _run_and_close(self, prompt: Prompt, deps: DepsT | None) -> RunResult[OutputT]:
        from loopwright.endpoints.base import close_shared_client

        try:
            return await self.run(prompt, deps=deps, raise_on_error=False)
        finally:
            await self.aclose()
            await close_shared_client()

    async def _prepare_sandbox_note(self, *, compact: bool) -> None:
        """Probe the sandbox once per agent, if any tool starts processes (tag "shell")."""
        if self._sandbox_note is None:
            note = ""  # assigned after the await: concurrent first runs all get the same note
            if self._runs_commands():
                from loopwright.safety.sandbox import sandbox_availability, sandbox_note

                available = (await sandbox_availability(self.sandbox)).available
                note = sandbox_note(self.sandbox, available=available, compact=compact)
            self._sandbox_note = note

    def _where_and_prompt(self, workdir: str | Path | None, compact: bool, project: bool
                          ) -> tuple[Path, str]:
        """The run's working directory, resolved (a walk of the disk too), and its prompt."""
        where = agent_parts.run_workdir(workdir)
        return where, self._system_prompt(where, compact, project=project)

    def _system_prompt(self, workdir: Path, compact: bool = False, *, project: bool = True
                       ) -> str:
        from loopwright.context.economy import instruction_chars
        from loopwright.context.prompt import build_system_prompt
        from loopwright.trust import prompt_content_trusted

        s = self.settings
        return build_system_prompt(user_prompt=s.system_prompt, compact=compact,
                                   has_tools=len(self.registry) > 0,
                                   static_notes=[self._sandbox_note or "",
                                                 self.skills.prompt_section() if self.skills
                                                 else ""],
                                   workdir=workdir, project=project,
                                   project_instructions=project and (
                                       s.trust_project_files or prompt_content_trusted(workdir)),
                                   max_instruction_chars=instruction_chars(self.windows),
                                   per_run_sections=self.state_services.prompt_sections())

    def _loop_settings(self, chain: ProviderChain, session_id: str, workdir: Path, *,
                       project: bool = True) -> LoopSettings:
        from loopwright.context.economy import context_layers, small_window
        from loopwright.review.plan import review_plan, text_call_reader
        from loopwright.run_state import LoopSettings
        from loopwright.safety.plugin import safety_layers
        from loopwright.tools.catalogue import RunCatalogue
        from loopwright.tools.execute import ToolExecutor
        from loopwright.tools.prompt_format import tool_call_plugins

        s = self.settings
        fmt = agent_parts.tool_format(s, chain)
        safety = safety_layers(hooks=self.hooks, policy=self.policy, approval=self.approval,
                               approve_all=s.approve_all, cache=self._approvals,
                               session_id=session_id, clarify=self.clarify,
                               allowed_roots=s.allowed_roots, workdir=workdir,
                               egress_allow=s.egress_allow)
        catalogue = RunCatalogue(self.registry, allowed_tags=s.allowed_tool_tags,
                                 deferred=s.deferred_tools, strict=s.strict_tools,
                                 local=chain.current.endpoint.is_local,
                                 compact=small_window(self.windows, chain))
        if self._summary_cooldown is None:
            from loopwright.context.summary import SummaryCooldown

            self._summary_cooldown = SummaryCooldown(s.summary_cooldown)
        context = context_layers(s, self.windows, chain,  # budgets sized from the window
                                 summary_cooldown=self._summary_cooldown,
                                 prompt_mode=fmt.tool_call_format == "prompt")
        executor = ToolExecutor(registry=self.registry, default_timeout=s.tool_timeout,
                                resolver=catalogue.resolve, gates=safety.gates,
                                filters=[*safety.filters, *context.filters])
        return LoopSettings(
            chain=chain,
            executor=executor,
            # outermost first: `before_model` runs in this order and `after_model` /
            # `on_answer` in reverse, so user hooks see the request before and the reply after
            # the tool-call format converts it, and compaction counts every note added earlier
            plugins=[*safety.plugins, *agent_parts.limit_plugins(s), *self.plugins,
                     *agent_parts.output_plugins(self._output, s, chain),
                     *self.state_services.plugins(),
                     *context.plugins,
                     *tool_call_plugins(fmt, catalogue, read_text_calls=text_call_reader(
                         fmt, chain, prompt_mode=fmt.tool_call_format == "prompt"))],
            max_turns=s.max_turns,
            stream=s.stream,
            max_tokens=s.max_tokens,
            temperature=s.temperature,
            reasoning_effort=s.reasoning_effort,
            review=review_plan(fmt, chain.current.profile,
                               prompt_mode=fmt.tool_call_format == "prompt"),
            max_auto_continues=s.max_auto_continues,
            workdir=workdir,
            project=project,
            approve=safety.approver,
            tool_specs=catalogue.specs,  # router (turn 1) → hide map → deferred + tool_search
            services={"agent": self, **safety.services, **context.services,
                      **self._tool_services(), **self.services},
            side_chains=self._side_chains(chain),
            route=self._route(),
        )

    def _tool_services(self) -> dict[str, Any]:
        """What the built-in tools read from their context: the sandbox (when one was made;
        without it a tool's commands get the default policy, which is what default settings
        give), private web hosts, and the skills' folders the file tools may read."""
        from loopwright.builtin.web_guard import WEB_ACCESS_SERVICE
        from loopwright.builtin.workspace import READ_ONLY_ROOTS_SERVICE

        services: dict[str, Any] = {WEB_ACCESS_SERVICE: self.settings.web_allow_private}
        if self._sandbox is not None:
            from loopwright.safety.sandbox import SANDBOX_SERVICE

            services[SANDBOX_SERVICE] = self._sandbox
        if self.skills is not None:
            services[READ_ONLY_ROOTS_SERVICE] = self.skills.read_only_roots()
        return services

    def _side_chains(self, chain: ProviderChain) -> dict[str, ProviderChain]:
        if not self._side_models:
            return {}
        from loopwright.routing.side import side_chains

        return side_chains(chain, {task: [self._providers.client(r) for r in found]
                                   for task, found in self._side_models.items()})

    def _route(self) -> Any:
        if self._chooser is None:
            return None
        from loopwright.routing.choose import ModelRouter

        return ModelRouter(self._chooser, self._providers.switched_chain).route

    @property
    def windows(self) -> list[WindowInfo]:
        """Each provider's context window once resolved (primary first, then fallbacks)."""
        return self._providers.windows

    async def context_windows(self) -> list[WindowInfo]:
        """Each provider's context window (primary first, then fallbacks) and where the number
        came from; resolves and probes once per agent."""
        await self._providers.resolve()
        return list(self.windows)

    async def providers(self) -> list[Resolved]:
        """The primary provider then each fallback, resolved once per agent (for checks such as
        the CLI's `preflight` before the first request)."""
        return list(await self._providers.resolve())


def _fan_out(callbacks: list[EventCallback]) -> EventCallback:
    """One callback that calls each of `callbacks` (read when called, so one added later is
    called too); one failing callback does not starve the others, and the first failure is
    raised after all have run."""

    def emit(event: Event) -> None:
        failure: Exception | None = None
        for callback in callbacks:
            try:
                callback(event)
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    return emit
