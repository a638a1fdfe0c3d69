"""What the page's live lists and batch view read: `GET /runs/news` (runs starting and ending,
as SSE, so a new session is listed while it runs) and `GET /batches` (the results of
`loopwright batch`, hostile lines left out)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from serve_helpers import MakeServer, Served, serve_process, sse_messages

from loopwright.batch.results import ResultRow
from loopwright.testing import FakeModelServer, Reply


def _news(served: Served, count: int, *, after: int | None = None,
          then: Any = None) -> list[tuple[int, dict[str, Any]]]:
    """The first `count` news items (from now, or after `after`); `then()` runs once the
    stream is open."""
    params = {"after": str(after)} if after is not None else {}
    found: list[tuple[int, dict[str, Any]]] = []
    with served.client().stream("GET", "/runs/news", params=params) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        if then is not None:
            then()
        for item in sse_messages(response.iter_lines()):
            found.append(item)
            if len(found) == count:
                break
    return found


def test_news_tells_of_a_run_starting_and_ending_and_its_session_is_listed_at_once(
        make_server: MakeServer) -> None:
    with FakeModelServer([Reply("slow answer", delay=1.0)]) as fake:
        served = make_server(fake)
        started: dict[str, Any] = {}
        listed: list[str] = []

        def start() -> None:
            started.update(served.start("a new task"))

        news = _news(served, 1, then=start)
        (number, first), = news
        assert first["type"] == "run_started"
        assert first["run"]["id"] == started["run_id"] and not first["run"]["finished"]
        assert first["run"]["session_id"] == started["session_id"]
        # the page lists the session when it hears of the run: it is in the store already
        listed = [s["id"] for s in served.api.get("/sessions").json()["sessions"]]
        assert started["session_id"] in listed
        assert not served.api.get(f"/runs/{started['run_id']}").json()["finished"]
        (_, ended), = _news(served, 1, after=number)
        assert ended["type"] == "run_finished" and ended["run"]["finished"]
        assert ended["run"]["stop_reason"] == "completed"


def test_news_replays_what_came_after_the_last_event_id(make_server: MakeServer) -> None:
    with FakeModelServer([Reply("one"), Reply("two")]) as fake:
        served = make_server(fake)
        for prompt in ("first", "second"):
            served.wait_finished(served.start(prompt)["run_id"])
        replayed = _news(served, 4, after=0)
    assert [n for n, _ in replayed] == [1, 2, 3, 4]
    assert [item["type"] for _, item in replayed] == ["run_started", "run_finished"] * 2


def _write_results(path: Path, rows: list[Any]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    (path / "results.jsonl").write_text("".join(f"{line}\n" for line in lines))


def _row(task: str, **fields: Any) -> dict[str, Any]:
    return ResultRow(id=task, line=1, status="done", **fields).to_dict()


def test_batches_are_listed_and_shown_with_hostile_lines_left_out(
        make_server: MakeServer, tmp_path: Path) -> None:
    good = tmp_path / "nightly"
    _write_results(good, [
        _row("add", solved=True, turns=2, cost=0.001,
             verdict={"passed": True, "checker": "contains", "detail": ""}),
        _row("sub", turns=5, cost=0.002,
             verdict={"passed": False, "checker": "contains", "detail": "no '42' in it"}),
        ResultRow(id="mul", line=3, status="failed", error="HTTP 500").to_dict(),
        _row("bad", turns="many"),  # a field of the wrong type: left out
        '["not", "an", "object"]', "{cut mid-line",
        _row("add", solved=True, turns=3, cost=0.001),  # a resumed batch ran it again
    ])
    with FakeModelServer([]) as fake:
        served = make_server(fake, batches=[good, tmp_path / "missing"])
        listed = served.api.get("/batches").json()["batches"]
        shown = served.api.get("/batches/0").json()
        errors = [served.api.get(f"/batches/{n}") for n in ("1", "2", "x", "\u00b2", "-1")]
    assert [b["name"] for b in listed] == ["nightly", "missing"]
    assert listed[0]["summary"]["tasks"] == 3 and listed[0]["summary"]["solved"] == 1
    assert "missing" in listed[1]["error"] and "summary" not in listed[1]
    assert [row["id"] for row in shown["rows"]] == ["sub", "mul", "add"]
    assert shown["rows"][2]["turns"] == 3  # the newest row of a task
    assert shown["summary"]["solved_share"] == 1 / 3
    assert [e.status_code for e in errors] == [404] * 5
    assert "no batch 2" in errors[1].json()["error"]


def test_loopwright_serve_batch_flag(tmp_path: Path) -> None:
    _write_results(tmp_path / "weekly", [_row("add", solved=True, turns=1)])
    with FakeModelServer([]) as fake, serve_process(
            "--model", "gpt-4o-mini", "--base-url", fake.base_url, "--api-key", "test",
            "--workdir", str(tmp_path), "--batch", str(tmp_path / "weekly"),
            "--batch", str(tmp_path / "weekly" / "results.jsonl")) as served:
        listed = served.api.get("/batches").json()["batches"]
    assert [(b["name"], b["summary"]["solved"]) for b in listed] == [("weekly", 1)] * 2
