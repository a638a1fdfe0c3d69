"""The intent router (`router = true`, off by default): on a run's first turn, a short side call
on `router_model` (default the main model) asks whether the prompt can be answered directly; if
so, that turn goes out without tool definitions, which on a large toolset is most of the
request. Anything but a clear "DIRECT" keeps the tools, and so does a failing router call.

Reported as `status` `routed` with the number of tools left out and the estimated input tokens
that saved (their JSON at ~4 characters a token).
"""

from __future__ import annotations

import json

from loopwright import messages
from loopwright.errors import LoopwrightError
from loopwright.messages import ModelRequest
from loopwright.plugins import LoopPlugin, RunView

MAX_ROUTED_PROMPT_CHARS = 1_000  # longer prompts are rarely trivial: no router call at all
ROUTER_PROMPT = """\
You route requests for an AI agent that has tools (files, shell, search, web). Decide whether the
user's request can be answered directly from general knowledge, with no tool and no look at the
user's files, system or the web. Reply with one word: DIRECT or TOOLS."""
CHARS_PER_TOKEN = 4


class IntentRouter(LoopPlugin):
    """See the module docstring."""

    async def before_model(self, run: RunView, request: ModelRequest) -> None:
        if run.turn != 1 or not request.tools or any(
                m.role == "tool" or m.tool_calls for m in request.messages):
            return  # (Anthropic rejects tool blocks in a history sent without tools)
        prompt = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        if not prompt.strip() or len(prompt) > MAX_ROUTED_PROMPT_CHARS:
            return
        ask = ModelRequest(model=run.model, max_tokens=5, messages=[
            messages.system(ROUTER_PROMPT), messages.user(prompt)])
        try:
            reply = await run.call_model(ask, purpose="router")
        except LoopwrightError as exc:
            run.status("routed", f"the router failed; tools kept: {exc}",
                       {"direct": False, "error": str(exc)})
            return
        if reply.message.content.strip().upper().rstrip(".") != "DIRECT":
            return
        saved = len(json.dumps([[t.name, t.description, t.parameters] for t in request.tools])
                    ) // CHARS_PER_TOKEN
        skipped = len(request.tools)
        request.tools = []
        request.tool_choice = None
        run.status("routed", f"answered directly: {skipped} tool definitions left out "
                   f"(~{saved:,} input tokens saved)",
                   {"direct": True, "tools_skipped": skipped, "tokens_saved": saved})
