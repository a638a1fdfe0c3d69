"""Attachments however a history enters a run: an `Attachment(path=...)` built directly has the
digest of the bytes first read recorded in its row, so an unchanged file is sent again on resume
and a changed one gets the note; a `store.load()` handed over as `history=` (to an agent without
a store, or to a new session) is held to the same check as a resumed session. Both stores."""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path

import pytest
from tests.store.test_resumed_attachments import (
    EDITED,
    GONE,
    PICTURE,
    agent_for,
    assert_goes_on_without_it,
    encoded,
    first_run,
    resume,
    sent,
    users_chart,
)

from loopwright import Agent, tool
from loopwright.attachments import Attachment
from loopwright.errors import ConfigError
from loopwright.messages import Message
from loopwright.store import open_store
from loopwright.store.read_back import AttachmentGoneWarning
from loopwright.testing import FakeModelServer, Reply, call


async def first_run_built_directly(tmp_path: Path, chart: Path, store_spec: str) -> None:
    """The first run with `Attachment(path=...)`: no digest given, nothing read yet."""
    attachment = Attachment(kind="image", media_type="image/png", path=str(chart))
    assert attachment.sha256 is None
    with FakeModelServer([Reply("a small square")]) as server:
        agent = agent_for(server, tmp_path, store_spec)
        await agent.run(["what is this?", attachment])
        await agent.aclose()


async def stored_digests(store_spec: str) -> list[str | None]:
    store = open_store(store_spec)
    assert store is not None
    try:
        history = await store.load("s1")
    finally:
        await store.aclose()  # type: ignore[attr-defined]
    return [a.sha256 for m in history for a in m.attachments]


@pytest.mark.timeout(60)
async def test_an_attachment_built_directly_resumes_unchanged(tmp_path: Path,
                                                               store_spec: str) -> None:
    chart = users_chart(tmp_path)
    await first_run_built_directly(tmp_path, chart, store_spec)
    assert await stored_digests(store_spec) == [hashlib.sha256(PICTURE).hexdigest()]
    server, warned = await resume(tmp_path, store_spec)
    assert encoded(PICTURE) in sent(server)
    assert GONE not in sent(server) and warned == []


@pytest.mark.timeout(60)
async def test_an_attachment_built_directly_and_edited_since_gets_the_note(
        tmp_path: Path, store_spec: str) -> None:
    chart = users_chart(tmp_path)
    await first_run_built_directly(tmp_path, chart, store_spec)
    chart.write_bytes(EDITED)
    server, warned = await resume(tmp_path, store_spec)
    assert_goes_on_without_it(server, warned, chart, "its bytes are not the ones attached",
                              EDITED)


async def loaded(tmp_path: Path) -> list[Message]:
    store = open_store(str(tmp_path / "data" / "sessions.db"))
    assert store is not None
    try:
        return await store.load("s1")
    finally:
        await store.aclose()  # type: ignore[attr-defined]


async def run_with(history: list[Message] | None, **agent_options: str
                   ) -> tuple[FakeModelServer, list[str]]:
    """A run handed `history`: what the model was sent, and what the user was warned of."""
    with FakeModelServer([Reply("still a square")]) as server, \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", **agent_options)
        try:
            result = await agent.run("and now?", history=history)
        finally:
            await agent.aclose()
    assert result.stop_reason == "completed", result.error
    return server, [str(w.message) for w in caught if w.category is AttachmentGoneWarning]


def into_another_store(tmp_path: Path) -> dict[str, str]:
    return {"store": str(tmp_path / "other" / "sessions.db"),
            "data_dir": str(tmp_path / "other")}


WHERE_IT_GOES = {"an agent without a store": lambda tmp_path: {},
                 "a new session in another store": into_another_store}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", list(WHERE_IT_GOES))
async def test_a_loaded_history_whose_file_changed_is_run_with_the_note(
        tmp_path: Path, where: str) -> None:
    chart = users_chart(tmp_path)
    await first_run(tmp_path, chart)
    chart.unlink()
    server, warned = await run_with(await loaded(tmp_path), **WHERE_IT_GOES[where](tmp_path))
    assert_goes_on_without_it(server, warned, chart, "No such file or directory")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", list(WHERE_IT_GOES))
async def test_a_loaded_history_whose_file_is_unchanged_is_sent_as_is(tmp_path: Path,
                                                                      where: str) -> None:
    await first_run(tmp_path, users_chart(tmp_path))
    server, warned = await run_with(await loaded(tmp_path), **WHERE_IT_GOES[where](tmp_path))
    assert encoded(PICTURE) in sent(server)
    assert GONE not in sent(server) and warned == []


@pytest.mark.timeout(60)
async def test_a_loaded_history_stored_in_a_new_session_resumes_there(tmp_path: Path) -> None:
    await first_run(tmp_path, users_chart(tmp_path))
    other = into_another_store(tmp_path)
    await run_with(await loaded(tmp_path), session_id="s2", **other)
    server, warned = await run_with(None, session_id="s2", **other)  # resumed
    assert encoded(PICTURE) in sent(server)
    assert GONE not in sent(server) and warned == []


def test_a_digest_of_another_shape_is_refused_when_the_attachment_is_built(
        tmp_path: Path) -> None:
    """Written as given, it made the session's row damaged: the session could not resume."""
    chart = users_chart(tmp_path)
    for digest in (hashlib.sha256(PICTURE).hexdigest().upper(), "abc", ""):
        with pytest.raises(ConfigError, match="not a SHA-256 as 64 lowercase hex digits"):
            Attachment(kind="image", media_type="image/png", path=str(chart), sha256=digest)
    given = hashlib.sha256(PICTURE).hexdigest()
    assert Attachment(kind="image", media_type="image/png", path=str(chart),
                      sha256=given).sha256 == given


@pytest.mark.timeout(60)
async def test_a_tool_results_attachment_built_directly_resumes_unchanged(
        tmp_path: Path) -> None:
    chart = users_chart(tmp_path)

    @tool
    def screenshot() -> list[str | Attachment]:
        """The screen."""
        return ["the screen:", Attachment(kind="image", media_type="image/png", path=str(chart))]

    script = [Reply(tool_calls=[call("screenshot", {})]), Reply("a square")]
    with FakeModelServer(script) as server:
        agent = Agent("fake-model", base_url=server.base_url, api_key="k", tools=[screenshot],
                      store=str(tmp_path / "data" / "sessions.db"),
                      data_dir=str(tmp_path / "data"), session_id="s1")
        await agent.run("look")
        await agent.aclose()
    server, warned = await resume(tmp_path)
    assert encoded(PICTURE) in sent(server)
    assert GONE not in sent(server) and warned == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize("where", list(WHERE_IT_GOES))
async def test_the_warning_names_the_session_the_loaded_history_came_from(
        tmp_path: Path, where: str) -> None:
    chart = users_chart(tmp_path)
    await first_run(tmp_path, chart)
    chart.unlink()
    _, warned = await run_with(await loaded(tmp_path), session_id="made-up",
                               **WHERE_IT_GOES[where](tmp_path))
    assert len(warned) == 1 and warned[0].startswith("session s1: attachment chart.png"), warned
    assert "made-up" not in warned[0]


@pytest.mark.timeout(60)
async def test_a_session_resumed_from_its_own_rows_is_named_in_the_warning(
        tmp_path: Path) -> None:
    chart = users_chart(tmp_path)
    await first_run(tmp_path, chart)
    other = into_another_store(tmp_path)
    await run_with(await loaded(tmp_path), session_id="s2", **other)  # its rows now s2's too
    chart.unlink()
    _, warned = await run_with(None, session_id="s2", **other)  # s2 resumed
    assert len(warned) == 1 and warned[0].startswith("session s2: attachment chart.png"), warned
