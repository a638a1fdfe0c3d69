"""Structural checks of a call before it runs: the tool it names exists (`unknown_tool`), and
its arguments parse, give values rather than the schema, hold no example's placeholder, and
validate (`bad_arguments`).

Both read the executor's own preparation of the call (`ToolExecutor.prepare`, through
`ReviewView.prepare`): the text a refused call is answered with is the executor's, and a call
they let through runs with the arguments prepared here, not parsed again. Their verdict is
`skip_call`, which costs no budget: the model reads the error as the call's result. With the
check off the executor still refuses such a call, with the same text and no `review` event."""

from __future__ import annotations

from loopwright.review.check import Check
from loopwright.review.verdicts import Verdict, skip_call
from loopwright.review.view import ReviewView
from loopwright.tools.argument_errors import shown_tool_name
from loopwright.tools.execute import ToolOutcome


class _Refusals(Check):
    """Stops each call the executor's preparation refuses as `refusal` (its data key)."""

    stage = "calls"
    refusal: str = ""

    async def review(self, view: ReviewView) -> list[Verdict]:
        prepare = view.prepare
        if prepare is None:  # a view without the executor: nothing to check against
            return []
        out = []
        for call in view.calls:
            item = await prepare(call)
            if type(item) is ToolOutcome and item.data.get(self.refusal):
                out.append(skip_call(call.id, item.content, _reason(item)))
        return out


class UnknownTool(_Refusals):
    """A call to a tool the run does not have is answered with the tools it has."""

    name = "unknown_tool"
    refusal = "unknown_tool"


class BadArguments(_Refusals):
    """A call whose arguments cannot be used is answered with what is wrong with them."""

    name = "bad_arguments"
    refusal = "bad_arguments"


def _reason(outcome: ToolOutcome) -> str:
    name = shown_tool_name(outcome.call.name)
    data = outcome.data
    if data.get("unknown_tool"):
        return f"{name}: no tool of that name"
    if data.get("unparsed"):
        return f"{name}: the arguments are not a JSON object"
    if data.get("schema_echo"):
        return f"{name}: the arguments repeat the tool's schema"
    if data.get("placeholder"):
        return f"{name}: an argument holds an example's placeholder"
    return f"{name}: the arguments do not match the tool's schema"
