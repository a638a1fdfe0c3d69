"""Images and PDFs in prompts and tool results: each wire format's own shape, token estimates,
sessions storing them by reference, a clear error for a model that takes none, and files read
in worker threads, never on the event loop."""

from __future__ import annotations

import base64
import json
import sqlite3
import struct
import sys
import threading
import traceback
import zlib
from pathlib import Path
from typing import Any

import pytest

from loopwright import Agent, document, image, messages, tool
from loopwright.attachments import Attachment
from loopwright.context.reminders import add_reminder
from loopwright.context.tokens import estimate_message
from loopwright.errors import ConfigError
from loopwright.plugins import LoopPlugin, RunView
from loopwright.testing import FakeModelServer, Reply, call
from loopwright.wire.splice import SplicedBodyFormat

MODES = ["chat_completions", "responses", "anthropic_messages"]


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"".join(b"\x00" + b"\x80" * width for _ in range(height)))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + \
        chunk(b"IEND", b"")


PDF = (b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
       b"2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >> endobj\n"
       b"3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n"
       b"4 0 obj << /Type /Page /Parent 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")


def last_user_parts(body: dict[str, Any], mode: str) -> list[dict[str, Any]]:
    if mode == "responses":
        users = [i for i in body["input"] if i.get("role") == "user"]
        return list(users[-1]["content"])
    users = [m for m in body["messages"] if m["role"] == "user"]
    return list(users[-1]["content"])


@pytest.mark.parametrize("mode", MODES)
async def test_an_image_and_a_pdf_in_the_prompt_take_each_formats_shape(
        mode: str, tmp_path: Path) -> None:
    picture = png(4, 3)
    (tmp_path / "report.pdf").write_bytes(PDF)
    with FakeModelServer([Reply("a grey square and a report")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", api_mode=mode)
        result = await agent.run(["What are these?", image(picture),
                                  document(tmp_path / "report.pdf")])
    assert result.output == "a grey square and a report"
    parts = last_user_parts(server.model_requests[0].body, mode)
    b64_png, b64_pdf = base64.b64encode(picture).decode(), base64.b64encode(PDF).decode()
    if mode == "chat_completions":
        assert parts == [
            {"type": "text", "text": "What are these?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64_png}"}},
            {"type": "file", "file": {"filename": "report.pdf",
                                      "file_data": f"data:application/pdf;base64,{b64_pdf}"}}]
    elif mode == "anthropic_messages":  # (the last block also marks the prompt cache)
        parts = [{k: v for k, v in part.items() if k != "cache_control"} for part in parts]
        assert parts[1:] == [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": b64_png}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                            "data": b64_pdf}}]
    else:
        assert parts == [
            {"type": "input_text", "text": "What are these?"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{b64_png}"},
            {"type": "input_file", "filename": "report.pdf",
             "file_data": f"data:application/pdf;base64,{b64_pdf}"}]


async def test_an_image_url_is_sent_as_the_url() -> None:
    with FakeModelServer([Reply("a cat")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k")
        await agent.run(["What is it?", image("https://example.com/cat.jpg")])
    parts = last_user_parts(server.model_requests[0].body, "chat_completions")
    assert parts[1] == {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}


@tool(read_only=True)
def screenshot() -> Any:
    """Take a screenshot."""
    return ["the screen:", image(png(2, 2))]


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_result_can_carry_an_image(mode: str) -> None:
    script = [Reply(tool_calls=[call("screenshot", {})]), Reply("I see the screen")]
    with FakeModelServer(script) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", api_mode=mode,
                      tools=[screenshot])
        assert (await agent.run("look")).output == "I see the screen"
    body = server.model_requests[1].body
    if mode == "anthropic_messages":
        result = body["messages"][-1]["content"][0]
        assert result["type"] == "tool_result"
        assert result["content"][0] == {"type": "text", "text": "the screen:"}
        assert result["content"][1]["type"] == "image"
    elif mode == "chat_completions":
        assert [m["role"] for m in body["messages"][-2:]] == ["tool", "user"]
        assert body["messages"][-2]["content"] == "the screen:"
        assert body["messages"][-1]["content"][1]["type"] == "image_url"
    else:
        kinds = [i.get("type") for i in body["input"][-2:]]
        assert kinds == ["function_call_output", "message"]
        assert body["input"][-1]["content"][1]["type"] == "input_image"


def test_token_estimates_count_pixels_and_pages_not_base64() -> None:
    big = messages.user("look", [image(png(1000, 1000))])
    assert estimate_message(big) < 2_000  # capped like Anthropic's per-image cost
    assert estimate_message(messages.user("x", [image(png(300, 300))])) >= 120
    assert estimate_message(messages.user("x", [document(PDF)])) >= 3_000  # two pages


async def test_a_session_stores_the_bytes_once_by_reference(tmp_path: Path) -> None:
    picture = png(8, 8)
    db = tmp_path / "sessions.db"
    with FakeModelServer([Reply("one"), Reply("two")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", store=str(db),
                      data_dir=str(tmp_path), session_id="s1")
        await agent.run(["first look", image(picture)])
        await agent.run(["second look", image(picture)])
        await agent.aclose()
    files = list((tmp_path / "attachments").iterdir())
    assert len(files) == 1 and files[0].suffix == ".png"
    assert files[0].read_bytes() == picture
    rows = sqlite3.connect(db).execute("SELECT data FROM messages").fetchall()
    text = " ".join(str(r[0]) for r in rows)
    assert base64.b64encode(picture).decode() not in text
    assert text.count(files[0].name) == 2


async def test_a_model_without_images_is_told_before_any_request() -> None:
    with FakeModelServer([]) as server:
        agent = Agent("o1-mini", base_url=server.base_url, api_key="k")
        with pytest.raises(ConfigError, match="o1-mini does not take images"):
            await agent.run(["what is this?", image(png(2, 2))])
    assert server.model_requests == []


def test_a_file_that_is_not_an_image_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(ConfigError, match="not a supported image"):
        image(tmp_path / "notes.txt")



# --- files read off the event loop --------------------------------------------------------------


class ReadLog:
    """Every read of an attachment's bytes: what it was for (`estimate`: a token estimate,
    `body`: a request body) and whether it ran on the event loop's thread."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.loop_thread = threading.get_ident()  # called from the async test: the loop's
        self.reads: list[tuple[str, bool]] = []
        original = Attachment.read

        def read(attachment: Attachment) -> bytes:
            # from this frame: walk_stack(None) skips our caller, which may name the purpose
            names = {frame.f_code.co_name for frame, _ in traceback.walk_stack(sys._getframe())}
            purpose = ("estimate" if "estimate_tokens" in names
                       else "body" if "encode_body" in names else "other")
            self.reads.append((purpose, threading.get_ident() == self.loop_thread))
            return original(attachment)

        monkeypatch.setattr(Attachment, "read", read)

    def on_loop(self, purpose: str) -> list[bool]:
        """For each read for `purpose`: was it on the loop's thread?"""
        return [on_loop for what, on_loop in self.reads if what == purpose]


async def run_with_files(mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ReadLog:
    """A run of three requests whose prompt holds an image and a PDF given by path and whose
    first tool returns another PDF by path; every file must reach the provider."""
    (tmp_path / "chart.png").write_bytes(png(40, 30))
    (tmp_path / "report.pdf").write_bytes(PDF)
    (tmp_path / "scan.pdf").write_bytes(PDF.replace(b"1.4", b"1.7"))

    @tool(read_only=True)
    def fetch_scan() -> Any:
        """Fetch the scan."""
        return ["the scan:", document(tmp_path / "scan.pdf")]

    @tool(read_only=True)
    def check() -> str:
        """Check."""
        return "checked"

    log = ReadLog(monkeypatch)
    script = [Reply(tool_calls=[call("fetch_scan", {})]), Reply(tool_calls=[call("check", {})]),
              Reply("all read")]
    with FakeModelServer(script) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", api_mode=mode,
                      tools=[fetch_scan, check])
        result = await agent.run(["What are these?", image(tmp_path / "chart.png"),
                                  document(tmp_path / "report.pdf")])
    assert result.output == "all read"
    sent = str(server.model_requests[2].body)
    for name in ("chart.png", "report.pdf", "scan.pdf"):
        assert base64.b64encode((tmp_path / name).read_bytes()).decode() in sent
    assert log.on_loop("other") == []
    return log


@pytest.mark.parametrize("mode", MODES)
async def test_token_estimates_read_files_off_the_event_loop(
        mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compaction estimates every request synchronously; each file it counts (an image's size,
    a PDF's pages) was measured before, once, in a worker thread."""
    log = await run_with_files(mode, tmp_path, monkeypatch)
    assert log.on_loop("estimate") == [False] * 3


@pytest.mark.parametrize("mode", MODES)
async def test_request_bodies_read_files_off_the_event_loop(
        mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file is read and encoded for the body once (later turns reuse the cached wire
    form), in a worker thread: never on the loop that runs every other run's turns."""
    log = await run_with_files(mode, tmp_path, monkeypatch)
    assert log.on_loop("body") == [False] * 3


async def test_a_request_without_attachments_is_encoded_on_the_loop(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread hop is kept for requests with files: an ordinary turn pays none."""
    loop_thread = threading.get_ident()
    threads: list[int] = []
    original = SplicedBodyFormat.encode_body

    def encode_body(self: SplicedBodyFormat, *args: Any, **kwargs: Any) -> bytes:
        threads.append(threading.get_ident())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SplicedBodyFormat, "encode_body", encode_body)
    with FakeModelServer([Reply("plain")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k")
        assert (await agent.run("hello")).output == "plain"
    assert threads == [loop_thread]


class _RemindAtStart(LoopPlugin):
    async def on_run_start(self, run: RunView) -> None:
        add_reminder(run, "REMEMBER-THE-FLAG")


@pytest.mark.parametrize("mode", MODES)
async def test_a_reminder_on_the_prompt_keeps_its_image(mode: str) -> None:
    # the note is merged into the last user message; that copy used to be rebuilt from its text
    # only, so the request lost the prompt's image
    picture = png(4, 3)
    with FakeModelServer([Reply("a grey square")]) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", api_mode=mode,
                      plugins=[_RemindAtStart()])
        result = await agent.run(["What is this?", image(picture)])
    assert result.output == "a grey square"
    sent = json.dumps(last_user_parts(server.model_requests[0].body, mode))
    assert base64.b64encode(picture).decode() in sent and "REMEMBER-THE-FLAG" in sent
