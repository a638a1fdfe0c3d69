"""Typed output over the wire: the server's name → type registry (`output_types=`, `loopwright
serve --output-type NAME=module:Class`), `"output_type": "Name"` on `POST /runs`, the validated
object in the `done` event and `GET /runs/{id}`, and validation failures as the agent has them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pydantic
import pytest
from serve_helpers import MakeServer, serve_process

from loopwright.errors import ConfigError
from loopwright.serve.agents import checked_output_types, output_types_from_flags
from loopwright.testing import FakeModelServer, Reply


class City(pydantic.BaseModel):
    name: str
    population: int


class Verdict(pydantic.BaseModel):
    passed: bool


TYPES = {"City": City, "Verdict": Verdict}


def _last(events: list[tuple[int, dict[str, object]]]) -> dict[str, object]:
    return events[-1][1]


def test_a_run_asked_for_a_named_type_ends_with_the_validated_object(
        make_server: MakeServer) -> None:
    script = [Reply('{"name": "Paris", "population": 2100000}'), Reply("plain words")]
    with FakeModelServer(script) as fake:
        served = make_server(fake, output_types=TYPES)
        assert served.api.get("/health").json()["output_types"] == ["City", "Verdict"]
        started = served.start("biggest city?", output_type="City")
        events = served.events(started["run_id"])
        shown = served.api.get(f"/runs/{started['run_id']}").json()
        plain = served.start("just talk")  # the same server, no type: text as before
        served.wait_finished(plain["run_id"])
        plain_shown = served.api.get(f"/runs/{plain['run_id']}").json()
        typed_request = fake.model_requests[0].body
        plain_request = fake.model_requests[1].body
    done = _last(events)
    assert done["type"] == "done"
    result = done["result"]
    assert isinstance(result, dict)
    assert result["stop_reason"] == "completed"
    assert result["output"] == {"name": "Paris", "population": 2100000}
    assert shown["output_type"] == "City" and shown["finished"]
    assert shown["output"] == {"name": "Paris", "population": 2100000}
    assert shown["error"] is None
    # the model was asked for the type's schema (gpt-4o-mini: OpenAI's json_schema format)
    schema = typed_request["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == {"name", "population"}
    assert "response_format" not in plain_request
    assert plain_shown["output_type"] is None and plain_shown["output"] == "plain words"


def test_invalid_output_is_sent_back_then_accepted_or_the_run_stops_output_invalid(
        make_server: MakeServer) -> None:
    script = [Reply('{"name": "Paris", "population": "many"}'),
              Reply('{"name": "Paris", "population": 2}'),
              Reply("not json at all"), Reply('{"name": "Lyon"}')]
    with FakeModelServer(script) as fake:
        served = make_server(fake, output_types=TYPES, agent={"output_retries": 1})
        fixed = served.start("biggest city?", output_type="City")
        fixed_events = [event for _, event in served.events(fixed["run_id"])]
        failed = served.start("another?", output_type="City")
        failed_events = [event for _, event in served.events(failed["run_id"])]
        failed_shown = served.api.get(f"/runs/{failed['run_id']}").json()
        feedback = json.dumps(fake.model_requests[1].body["messages"][-1])
    retries = [e for e in fixed_events if e["type"] == "status" and e["kind"] == "output_retry"]
    assert len(retries) == 1 and "population" in retries[0]["data"]["errors"]
    assert "population: Input should be a valid integer" in feedback  # the model was told
    assert fixed_events[-1]["result"]["output"] == {"name": "Paris", "population": 2}

    assert [e["kind"] for e in failed_events if e["type"] == "status"
            and e["kind"] == "output_retry"] == ["output_retry"]
    assert failed_events[-1]["result"]["stop_reason"] == "output_invalid"
    assert failed_shown["stop_reason"] == "output_invalid"
    assert "population: Field required" in failed_shown["error"]
    assert failed_shown["output"] != {"name": "Lyon"}  # never an unvalidated object


def test_an_unknown_output_type_name_is_refused_naming_the_known_ones(
        make_server: MakeServer) -> None:
    with FakeModelServer([]) as fake:
        served = make_server(fake, output_types=TYPES)
        for name in ["Country", "os:system", "loopwright.serve.app:ServeOptions"]:
            refused = served.api.post("/runs", json={"prompt": "x", "output_type": name})
            assert refused.status_code == 400
            assert refused.json()["error"] == (f"output_type: unknown {name!r}; this server "
                                               "knows City, Verdict")
        wrong_kind = served.api.post("/runs", json={"prompt": "x", "output_type": 3})
        assert wrong_kind.status_code == 400
        assert wrong_kind.json()["error"] == "output_type must be a string"
    with FakeModelServer([]) as fake:
        bare = make_server(fake)
        refused = bare.api.post("/runs", json={"prompt": "x", "output_type": "City"})
        assert refused.status_code == 400
        assert "this server has none (start it with --output-type" in refused.json()["error"]


class NotAType:
    """pydantic cannot build a schema for a plain class with no fields it knows."""

    def __init__(self, handle: object) -> None:
        self.handle = handle


def test_the_registry_is_checked_when_the_server_is_built() -> None:
    assert checked_output_types(TYPES) == TYPES
    with pytest.raises(ConfigError, match="output type name 'a city'"):
        checked_output_types({"a city": City})
    with pytest.raises(ConfigError, match="cannot be used"):
        checked_output_types({"Odd": NotAType})
    assert output_types_from_flags([f"C={__name__}:City"]) == {"C": City}
    for flag, words in [("City", "expected NAME=module:Class"),
                        ("=mod:City", "expected NAME=module:Class"),
                        ("C=nosuch_module_xyz:City", "C: cannot import 'nosuch_module_xyz'"),
                        (f"C={__name__}:Town", f"C: {__name__} has no attribute 'Town'"),
                        (f"C={__name__}", "is not 'module:attribute'")]:
        with pytest.raises(ConfigError, match=words):
            output_types_from_flags([flag])
    with pytest.raises(ConfigError, match="given twice"):
        output_types_from_flags([f"C={__name__}:City", f"C={__name__}:Verdict"])


MODELS_MODULE = '''
import pydantic


class Report(pydantic.BaseModel):
    title: str
    score: int
'''


def test_loopwright_serve_output_type_flag(tmp_path: Path) -> None:
    (tmp_path / "report_models.py").write_text(MODELS_MODULE)
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    bad = subprocess.run(
        [sys.executable, "-m", "loopwright", "serve", "--port", "0",
         "--output-type", "Report=report_models:Missing"],
        capture_output=True, text=True, timeout=60, env={**os.environ, **env}, check=False)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "loopwright: --output-type Report: report_models has no attribute 'Missing'"]

    with FakeModelServer([Reply('{"title": "ok", "score": 7}')]) as fake:
        flags = ("--model", "gpt-4o-mini", "--base-url", fake.base_url, "--api-key", "test",
                 "--workdir", str(tmp_path), "--output-type",
                 "Report=report_models:Report")
        with serve_process(*flags, env=env) as served:
            started = served.start("rate it", output_type="Report")
            done = served.events(started["run_id"])[-1][1]
    assert done["result"]["output"] == {"title": "ok", "score": 7}
