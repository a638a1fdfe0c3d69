"""The tool model: a function, its JSON schema and what the loop needs to know to run it safely."""

from __future__ import annotations

import contextlib
import functools
import inspect
import re
import sys
import types
import typing
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, overload

from typing_extensions import TypeVar

from loopwright.messages import ToolSpec
from loopwright.tools.context import (  # their home is context.py; read here too (`__all__`)
    ApprovalGate,
    CallingRun,
    ChangePreview,
    DepsT,
    ToolContext,
)
from loopwright.tools.docstrings import parse_docstring
from loopwright.tools.finite import refuse_non_finite_text
from loopwright.tools.schema import (
    check_against_schema,
    clean_schema,
    drop_null_optionals,
    strict_schema,
)

__all__ = [
    "ApprovalGate", "CallingRun", "DepsT", "FunctionTool", "Tool", "ToolContext", "ToolFunction",
    "ToolSignature", "signature_of", "tool", "tool_from_function"]

if TYPE_CHECKING:
    import pydantic
    import pydantic.json_schema

ToolFunction = Callable[..., Any]
# what OpenAI's function names allow, and Anthropic's: a name outside it fails every request
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(kw_only=True, eq=False)
class Tool:
    """A callable the model may use.

    `read_only` tools may run concurrently with each other; `interactive` tools (they ask the user)
    force the whole batch to run sequentially. `concurrent_safe` tools are not read-only but may
    still run alongside read-only and other concurrent-safe calls (sub-agents: `delegate`).
    `deferred` tools are registered but only advertised after `tool_search` finds them. `core`
    tools are never deferred. `network` tools reach the network: every URL in their arguments
    passes the egress policy first (`safety/egress.py`).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    function: ToolFunction
    read_only: bool = False
    interactive: bool = False
    tags: frozenset[str] = frozenset()
    deferred: bool = False
    core: bool = False
    concurrent_safe: bool = False
    network: bool = False
    timeout: float | None = None
    arguments_model: type[pydantic.BaseModel] | None = None
    takes_context: bool = False
    context_parameter: str = "ctx"  # the parameter the `ToolContext` goes to
    # parameters before a `/`: passed by position, in this order (the context's among them)
    positional_only: tuple[str, ...] = ()
    raw_arguments: bool = False  # function(arguments: dict, ctx) rather than keyword arguments
    preview: ChangePreview | None = None  # the diff a call would make, for approval prompts

    _spec_cache: dict[bool, ToolSpec] = field(default_factory=dict, init=False, repr=False)
    # (function, whether it is async): `inspect` asked once, not on every call
    _kind_cache: tuple[ToolFunction, bool] | None = field(default=None, init=False, repr=False)
    # (the arguments model, its (key, field name) pairs): see `_argument_keys`
    _fields_cache: tuple[type[pydantic.BaseModel], tuple[tuple[str, str], ...]] | None = field(
        default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not _TOOL_NAME.fullmatch(self.name):
            raise ValueError(
                f"tool name {self.name[:80]!r} is not one every provider accepts: use 1 to 64 "
                "ASCII letters, digits, '_' or '-' (OpenAI and Anthropic refuse every request "
                "that offers it), e.g. @tool(name=\"get_weather\")")

    def spec(self, *, strict: bool = False) -> ToolSpec:
        """The tool as advertised. `strict=True` gives an OpenAI strict-mode schema when the
        schema can be expressed strictly, else the normal one (built once, then reused)."""
        cached = self._spec_cache.get(strict)
        if cached is not None:
            return cached
        spec = ToolSpec(name=self.name, description=self.description, parameters=self.parameters)
        if strict:
            # a free-form object (ValueError) has no strict form: keep the normal schema
            with contextlib.suppress(ValueError):
                spec = ToolSpec(name=self.name, description=self.description,
                                parameters=strict_schema(self.parameters), strict=True)
        self._spec_cache[strict] = spec
        return spec

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check arguments against the schema; raises `pydantic.ValidationError` or `ValueError`
        (`ArgumentsError` for NaN or infinity written as text: `tools.finite`). `null` for an
        optional parameter that does not accept null means "not given"."""
        arguments = drop_null_optionals(arguments, self.parameters)
        if self.arguments_model is not None:
            model = self.arguments_model.model_validate(arguments)
            refuse_non_finite_text(arguments, model)
            return {key: getattr(model, name) for key, name in self._argument_keys(type(model))}
        check_against_schema(arguments, self.parameters)
        return arguments

    def _argument_keys(self, model: type[pydantic.BaseModel]) -> tuple[tuple[str, str], ...]:
        """(the function's parameter, the field's name) for each field of `model` (a model not
        made from a function: its field names), read from pydantic once per model class, not
        on every call (`model_fields` is a descriptor that calls a class method each time)."""
        known = self._fields_cache
        if known is None or known[0] is not model:
            parameters = _PARAMETER_NAMES.get(model, {})
            known = self._fields_cache = (model, tuple(
                (parameters.get(name, name), name) for name in model.model_fields))
        return known[1]

    def _is_async(self) -> bool:
        known = self._kind_cache
        if known is None or known[0] is not self.function:
            known = self._kind_cache = (self.function,
                                        inspect.iscoroutinefunction(self.function))
        return known[1]

    async def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        """Run the function with validated arguments (sync functions in a worker thread)."""
        if self.raw_arguments:
            call_args: tuple[Any, ...] = (arguments, ctx)
            kwargs: dict[str, Any] = {}
        else:
            kwargs = dict(arguments)
            if self.takes_context:
                kwargs[self.context_parameter] = ctx
            call_args = _take_positional(kwargs, self.positional_only
                                         ) if self.positional_only else ()
        if self._is_async():
            return await self.function(*call_args, **kwargs)
        run_in_thread = _thread_runner()  # the first plain tool call loads it
        result = await run_in_thread(functools.partial(self.function, *call_args, **kwargs))
        # most tools return text: no `inspect.isawaitable` (an ABC instance check) for it
        if type(result) in _PLAIN_RESULTS or not inspect.isawaitable(result):
            return result
        return await result


def _take_positional(kwargs: dict[str, Any], names: tuple[str, ...]) -> tuple[Any, ...]:
    """The values of the positional-only parameters `names`, taken out of `kwargs` up to the
    first one missing (the function then names what it lacks, as for any missing argument)."""
    taken = []
    for name in names:
        if name not in kwargs:
            break
        taken.append(kwargs.pop(name))
    return tuple(taken)


_PLAIN_RESULTS = frozenset({str, bytes, dict, list, tuple, int, float, bool, type(None)})


@functools.cache
def _thread_runner() -> Callable[[Callable[[], Any]], Awaitable[Any]]:
    """`worker_threads.run_in_thread`, imported by the first plain tool call (not an import
    statement per call: each costs a module lookup and a check of its spec)."""
    from loopwright.worker_threads import run_in_thread

    return run_in_thread

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(kw_only=True, eq=False)
class FunctionTool(Tool, Generic[P, R]):
    """What `@tool` returns: a `Tool` that is still the function it was made from, so
    `add(1, 2)` (or `await fetch(url)`) calls it directly, typed as before — for tests of your
    own tools and for code that used the function."""

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self.function(*args, **kwargs)
        return result

    def __post_init__(self) -> None:
        super().__post_init__()
        self.__wrapped__ = self.function
        self.__doc__ = self.function.__doc__


@overload
def tool(function: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    interactive: bool = False,
    tags: typing.Iterable[str] = (),
    deferred: bool = False,
    core: bool = False,
    timeout: float | None = None,
    network: bool = False,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    interactive: bool = False,
    tags: typing.Iterable[str] = (),
    deferred: bool = False,
    core: bool = False,
    timeout: float | None = None,
    network: bool = False,
) -> FunctionTool[Any, Any] | Callable[[ToolFunction], FunctionTool[Any, Any]]:
    """Make a `Tool` from a function: type hints → JSON schema, docstring → description.

    Use as `@tool` or `@tool(read_only=True, tags={"math"})`. Parameter descriptions come from
    `Annotated[int, "the count"]`, a `Field(description=…)` or the docstring (a Google `Args:`
    section, NumPy `Parameters` or Sphinx `:param x:`, mixed freely). The model reads a text
    result as it is, anything else as JSON (dataclasses, dates, UUIDs and paths included).

    A parameter may have any name (`json`, `schema`, `model_config`, `_id`): the model sees it
    as written. One annotated `ToolContext` (or `ToolContext | None`), whatever its name, or
    an unannotated `ctx`, gets the call's context instead of an argument.

    Raises `TypeError` for a function the model could not call as written: a `*args` or
    `**kwargs` parameter, a parameter type with no JSON schema (or a name in an annotation
    that is not there at run time), two context parameters, a generator function (what it
    yields would never reach the model); `ValueError` for a tool name a
    provider refuses (1 to 64 ASCII letters, digits, `_` or `-`).
    """

    def build(fn: ToolFunction, namespace: Namespace | None = None) -> FunctionTool[Any, Any]:
        return tool_from_function(
            fn, name=name, description=description, read_only=read_only,
            interactive=interactive, tags=tags, deferred=deferred, core=core, timeout=timeout,
            network=network,
            # the names where the decorator is applied, as pydantic's `validate_call` takes
            # them: a type defined in the same function as the tool
            namespace=sys._getframe(1).f_locals if namespace is None else namespace,
        )

    if function is not None:
        return build(function, sys._getframe(1).f_locals)
    return build


def tool_from_function(
    fn: ToolFunction,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    interactive: bool = False,
    tags: typing.Iterable[str] = (),
    deferred: bool = False,
    core: bool = False,
    timeout: float | None = None,
    network: bool = False,
    namespace: Namespace | None = None,
) -> FunctionTool[Any, Any]:
    """`@tool`'s work; `namespace` holds the names visible where the function was defined, for
    its string annotations (`from __future__ import annotations`)."""
    import pydantic

    name = name or _default_name(fn)
    described = _described(fn)
    summary, param_docs = parse_docstring(_docstring(fn, described))
    try:
        signature = signature_of(fn, param_docs, tool_name=name, namespace=namespace)
        parameters = clean_schema(signature.arguments_model.model_json_schema(
            schema_generator=_tool_schema_generator()))
    except pydantic.PydanticUserError as exc:  # a type with no schema; typing.TypedDict, 3.11
        raise _unusable_parameter(name, fn, exc, namespace) from None
    return FunctionTool(
        name=name,
        description=description or summary or name.replace("_", " "),
        parameters=parameters,
        function=fn,
        read_only=read_only,
        interactive=interactive,
        tags=frozenset(tags),
        deferred=deferred,
        core=core,
        timeout=timeout,
        network=network,
        arguments_model=signature.arguments_model,
        takes_context=signature.context_parameter is not None,
        context_parameter=signature.context_parameter or "ctx",
        positional_only=signature.positional_only,
    )


@dataclass(frozen=True, slots=True)
class ToolSignature:
    """How a function is called with the arguments a model wrote."""

    arguments_model: type[pydantic.BaseModel]
    context_parameter: str | None  # the parameter the `ToolContext` goes to, if any
    positional_only: tuple[str, ...]  # passed by position, in order (the context's among them)


def signature_of(fn: ToolFunction, param_docs: dict[str, str], *,
                 tool_name: str | None = None, namespace: Namespace | None = None
                 ) -> ToolSignature:
    """The pydantic model of the function's parameters (minus an injected `ToolContext`), and
    how to call it. pydantic is imported here, by the first tool made from a function, not by
    the package.

    Each field is named `p0`, `p1`… and aliased to its parameter's name, so any name the model
    may write is a parameter name: `json`, `schema` or `model_config` as a field name would
    shadow (or be) an attribute of `pydantic.BaseModel` — pydantic warns, or drops the field —
    and a leading underscore would make it private. Raises `TypeError` for a `*args` or
    `**kwargs` parameter (the model could never be told what they take) and for a function
    that takes the context twice."""
    import pydantic

    shown = tool_name or _default_name(fn)
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(
            f"tool {shown!r} is a generator function: the model would read '<generator "
            "object …>', never what it yields; return the values (`return list(…)`, or text)")
    fields: dict[str, Any] = {}
    parameter_names: dict[str, str] = {}
    context: str | None = None
    positional_only: list[str] = []
    for index, (param, annotation) in enumerate(_parameters(fn, namespace, shown=shown)):
        if index == 0 and param.name in ("self", "cls") and param.annotation is param.empty:
            raise TypeError(
                f"tool {shown!r}: its first parameter is {param.name!r}, so @tool was applied to "
                "a method in its class body and the model would have to send it: make the tool "
                "from the bound method instead (`tool(instance.method)`, or pass "
                "`instance.method` in `tools=`)")
        if param.kind is param.POSITIONAL_ONLY:
            positional_only.append(param.name)
        if _is_context(annotation) or (param.name == "ctx" and annotation is Any):
            if context is not None:
                raise TypeError(f"tool {shown!r}: parameters {context!r} and {param.name!r} "
                                "both take the ToolContext: keep one")
            context = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            stars = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise TypeError(
                f"tool {shown!r}: parameter {stars}{param.name} cannot be "
                "shown to the model (a tool's schema names each argument): give each argument "
                "a parameter of its own, or take one `dict` parameter")
        fields[f"p{len(fields)}"] = _field(param, annotation, param_docs.get(param.name))
        parameter_names[f"p{len(parameter_names)}"] = param.name
    model = pydantic.create_model(
        f"{shown}_arguments", __config__=_ARGUMENTS_CONFIG, **fields)
    _PARAMETER_NAMES[model] = parameter_names
    return ToolSignature(arguments_model=model, context_parameter=context,
                         positional_only=tuple(positional_only))


@functools.cache
def _tool_schema_generator() -> type[pydantic.json_schema.GenerateJsonSchema]:
    """pydantic's JSON schema generator, quiet about a default with no JSON form (it is left
    out of the schema, which is all the model needs): its warning raised under `-W error`."""
    from pydantic.json_schema import GenerateJsonSchema, JsonSchemaWarningKind

    class ToolSchema(GenerateJsonSchema):
        ignored_warning_kinds: set[JsonSchemaWarningKind] = {  # noqa: RUF012 (pydantic's)
            "skipped-choice", "non-serializable-default"}

    return ToolSchema


# the parameter each field of a model made from a function stands for ({"p0": "json", …}):
# `Tool.validate` gives the function its arguments under these names
_PARAMETER_NAMES: weakref.WeakKeyDictionary[type[Any], dict[str, str]] = (
    weakref.WeakKeyDictionary())


def _field(param: inspect.Parameter, annotation: Any, documented: str | None
           ) -> tuple[Any, Any]:
    """The (type, `pydantic.Field`) of one parameter: named as the parameter unless its own
    `Field` gives an alias, described by its own `Field`, else `Annotated`'s string, else the
    docstring. A `Field(...)` as the default (`limit: int = Field(10, ge=1)`) is its `Field`.
    Only what is known is set: a `Field` given `description=None` hides the function's own."""
    import pydantic
    from pydantic.fields import FieldInfo

    annotation, doc = _split_annotated(annotation)
    default = ... if param.default is param.empty else param.default
    if isinstance(default, FieldInfo):
        annotation, default = typing.Annotated[annotation, default], ...
    own = [extra for extra in getattr(annotation, "__metadata__", ())
           if isinstance(extra, FieldInfo)]
    settings: dict[str, Any] = {}
    if not any(info.alias or info.validation_alias for info in own):
        settings["alias"] = param.name
    if (doc or documented) and not any(info.description for info in own):
        settings["description"] = doc or documented
    return annotation, pydantic.Field(default, **settings)


Namespace = typing.Mapping[str, Any]


def _parameters(fn: ToolFunction, namespace: Namespace | None = None, *, shown: str = ""
                ) -> list[tuple[inspect.Parameter, Any]]:
    """Each parameter of `fn` with its resolved annotation (`Any` when it has none), names in
    string annotations (`from __future__ import annotations`) looked up in the function's
    module, then in `namespace` (where `@tool` was applied: a class defined in a function)."""
    params = list(inspect.signature(fn).parameters.values())
    try:
        hints = typing.get_type_hints(_described(fn), localns=namespace, include_extras=True)
    except NameError:  # one annotation names what is not there at run time: find which
        hints = {param.name: _resolved(fn, param, namespace, shown)
                 for param in params if param.annotation is not param.empty}
    return [(param, hints.get(param.name, Any)) for param in params]


def _default_name(fn: ToolFunction) -> str:
    """The name of the function (a `functools.partial`'s), or of a callable object's class."""
    described = _described(fn)
    if described is not fn and not isinstance(fn, functools.partial):
        return type(fn).__name__
    return str(getattr(described, "__name__", type(fn).__name__))


def _docstring(fn: ToolFunction, described: Any) -> str:
    """The docstring that describes `fn`: a callable object's `__call__`'s own (not the one it
    inherits from `object`), else its class's; `partial`'s class doc is never it."""
    if described is fn or isinstance(fn, functools.partial):
        return inspect.getdoc(described) or ""
    own = getattr(described, "__doc__", None)
    if own:
        return inspect.cleandoc(own)
    return inspect.getdoc(fn) or ""


def _described(fn: ToolFunction) -> Any:
    """What describes `fn` (its name, docstring and annotations): the function a
    `functools.partial` wraps, the `__call__` of a callable object, else `fn`."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.isroutine(fn) or isinstance(fn, type):
        return fn
    return getattr(fn, "__call__", fn)  # noqa: B004 (a callable object's own method)


# `ToolContext`, `ToolContext[Deps]`, `lw.ToolContext | None`, `Optional[ToolContext]`: what a
# module that imports ToolContext only for type checkers (`if TYPE_CHECKING:`) writes
_CONTEXT_TEXT = re.compile(r"\s*(?:(?:typing\.)?Optional\[)?(?:[\w.]+\.)?ToolContext\b")


def _resolved(fn: ToolFunction, param: inspect.Parameter, namespace: Namespace | None,
              shown: str) -> Any:
    """One parameter's annotation, resolved alone; `ToolContext` for one that names it but
    cannot be resolved (imported for type checkers only)."""
    holder = types.SimpleNamespace(__annotations__={param.name: param.annotation})
    try:
        return typing.get_type_hints(holder, globalns=getattr(_described(fn), "__globals__", {}),
                                     localns=namespace, include_extras=True)[param.name]
    except NameError as exc:
        if isinstance(param.annotation, str) and _CONTEXT_TEXT.match(param.annotation):
            return ToolContext
        raise TypeError(
            f"tool {shown!r}: the annotation of parameter {param.name!r} "
            f"({param.annotation!r}) cannot be resolved: {exc}; define or import what it "
            "names at the module's top level (an import under `if TYPE_CHECKING:` is not "
            "there when the program runs)") from None


_ARGUMENTS_CONFIG: pydantic.ConfigDict = {"extra": "forbid", "arbitrary_types_allowed": True}


def _unusable_parameter(name: str, fn: ToolFunction, exc: Exception,
                        namespace: Namespace | None) -> TypeError:
    """pydantic's refusal of a tool's parameters as one `TypeError` naming the parameter at
    fault (found by trying each alone: only on this path, so a good tool pays nothing)."""
    import pydantic

    culprit = None
    for param, annotation in _parameters(fn, namespace, shown=name):
        if _is_context(annotation) or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        try:
            pydantic.create_model("probe", __config__=_ARGUMENTS_CONFIG,
                                  value=(_split_annotated(annotation)[0], ...)
                                  ).model_json_schema()
        except pydantic.PydanticUserError:
            culprit = f"parameter {param.name!r} ({_type_name(annotation)})"
            break
    first = str(exc).splitlines()[0]
    if culprit is None:  # not a type at fault (a name pydantic refuses): its words say which
        return TypeError(f"tool {name!r}: its parameters cannot be read: {first}")
    if getattr(exc, "code", None) == "typed-dict-version":
        return TypeError(
            f"tool {name!r}: {culprit} uses a typing.TypedDict, which pydantic cannot read on "
            "Python < 3.12: define it with `typing_extensions.TypedDict` instead")
    return TypeError(
        f"tool {name!r}: {culprit} has no JSON schema to show the model "
        f"({first}): annotate it with a JSON type (str, int, float, bool, "
        "a list or dict of those), a pydantic model, a dataclass or a TypedDict of those, and "
        "make the object it stands for inside the tool")


def _type_name(annotation: Any) -> str:
    return annotation.__qualname__ if isinstance(annotation, type) else repr(annotation)


def _is_context(annotation: Any) -> bool:
    """`ToolContext`, `ToolContext[Deps]`, or either `| None` (a tool also called directly)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        others = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return len(others) == 1 and _is_context(others[0])
    if typing.get_origin(annotation) is ToolContext:  # ToolContext[Deps]
        return True
    return annotation is ToolContext


def _split_annotated(annotation: Any) -> tuple[Any, str | None]:
    """`Annotated[int, "desc"]` → (Annotated[int] minus the string, "desc")."""
    if typing.get_origin(annotation) is not typing.Annotated:
        return annotation, None
    base, *extras = typing.get_args(annotation)
    doc = next((e for e in extras if isinstance(e, str)), None)
    rest = [e for e in extras if not isinstance(e, str)]
    if rest:
        return typing.Annotated[(base, *rest)], doc
    return base, doc
