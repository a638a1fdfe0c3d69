"""What the model reads when its tool-call arguments cannot be used: what is wrong, and an
example or the parameters in words (`tools/examples.py`). Parsing and repair are
`loopwright/arguments.py`."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from loopwright.tools.examples import (
    PLACEHOLDER,
    describe_parameters,
    example_call,
    grounded_example,
)

if TYPE_CHECKING:
    import pydantic


def describe_validation_error(exc: pydantic.ValidationError | ValueError) -> str:
    """A short, precise list of what is wrong with the arguments."""
    # a pydantic error can only exist once pydantic is imported: no need to import it here
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(exc, pydantic.ValidationError):
        return str(exc)
    problems = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(part) for part in err["loc"]) or "(arguments)"
        if err["type"] == "missing":
            problems.append(f"missing required argument {where!r}")
        elif err["type"] == "extra_forbidden":
            problems.append(f"unknown argument {where!r}")
        else:
            problems.append(f"{where!r}: {err['msg']} (got {err.get('input')!r:.60})")
    return "; ".join(problems)


def placeholder_message(tool_name: str, arguments: dict[str, Any], schema: dict[str, Any]
                        ) -> str | None:
    """The error for a call that copied an example's placeholder as a value, or None (the 0.5B,
    shown `{"path": "...", "old": "...", "new": "..."}`, sent exactly that; shown the prompt's
    example, it wrote a file named "..."). A real value is never just the placeholder."""
    properties = schema.get("properties") or {}
    copied = [name for name, value in arguments.items()
              if value == PLACEHOLDER and isinstance(properties.get(name), dict)]
    if not copied:
        return None
    names = ", ".join(repr(n) for n in copied)
    return (f"Error: {names} still hold the example's placeholder {PLACEHOLDER!r}, so "
            f"{tool_name!r} was not run. The example only shows the shape of a call: call it "
            "again with the real values, from the user's request or from the results you have.")


def arguments_error_message(tool_name: str, problem: str, schema: dict[str, Any], *,
                            request: str = "") -> str:
    """What the model reads when its arguments cannot be used: an example only when every value
    of it comes from the request or the schema (a copied sample would run), else the
    parameters in words."""
    return (
        f"Error: the arguments for tool {tool_name!r} could not be used: {problem}. "
        f"The tool was not run. Call it again with arguments that are one JSON object matching "
        f"its schema, {example_or_parameters(schema, request=request)}"
    )


def example_or_parameters(schema: dict[str, Any], *, written: dict[str, Any] | None = None,
                          request: str = "") -> str:
    """"for example: {…}" when every value is grounded, else "with: path (string), …"."""
    example = grounded_example(schema, written=written, request=request)
    if example is None:
        return f"with: {describe_parameters(schema)}, values taken from the request or results"
    return f"for example: {json.dumps(example, ensure_ascii=False)}"


_SHOWN_NAME_CHARS = 100  # no tool's name is longer than 64


def shown_tool_name(name: str) -> str:
    """A tool name a model wrote, as the runtime repeats it (an error, a review event): a
    runaway name is not echoed back whole."""
    if len(name) <= _SHOWN_NAME_CHARS:
        return name
    return f"{name[:_SHOWN_NAME_CHARS]}… ({len(name):,} characters)"


def unknown_tool_message(name: str, suggested: list[str],
                         closest_schema: dict[str, Any] | None, *, request: str = "") -> str:
    """What the model reads after calling a tool that does not exist: the tools it has, and a
    filled-in call of the closest one (`suggested[0]`) when every value of it comes from the
    request — small models that only get the names apologise instead of calling (seen with
    Qwen2.5-Coder-1.5B asking for `grep` when it had `read_file`). Without such a call, no
    parameter is described in words: the 0.5B copied "run_python takes code (string)." into
    its next call as the code to run, and "read_file takes path (string)." as a path (bench
    dev2 split, docs/benchmarks.md); the parameters are in the tool's definition."""
    names = ", ".join(suggested) or "(none)"
    message = (f"Error: there is no tool named {shown_tool_name(name)!r}. Tools you can call: "
               f"{names}.")
    if suggested and closest_schema is not None:
        example = example_call(suggested[0], closest_schema, request=request, grounded=True)
        message += (f" Call one of them instead, for example: {example}" if example else
                    " Call one of them instead, by its name, with the arguments its "
                    "definition lists.")
    return message


def truncated_call_message(tool_name: str) -> str:
    return (
        f"Error: your call to {tool_name!r} was cut off by the output-token limit before its "
        "arguments were complete, so it was not run. Retry with smaller arguments: split large "
        "content into several smaller calls."
    )
