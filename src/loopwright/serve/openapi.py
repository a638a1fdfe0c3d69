"""The API's OpenAPI 3.1 description, served at `/openapi.json` and rendered at `/docs`.

Written by hand next to the handlers (a test checks that it lists exactly the server's routes), so
the server needs no schema generator and no web UI fetched from a CDN.
"""

from __future__ import annotations

from typing import Any

_ERROR = {"description": "error", "content": {"application/json": {"schema": {
    "$ref": "#/components/schemas/Error"}}}}


def _json(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {
        "schema": schema or {"type": "object"}}}}


def _body(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"required": bool(required), "content": {"application/json": {"schema": {
        "type": "object", "properties": properties, "required": required or [],
        "additionalProperties": False}}}}


_RUN_ID = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
_STR = {"type": "string"}

PATHS: dict[str, dict[str, Any]] = {
    "/health": {"get": {"summary": "Liveness, version, the number of live runs and the "
                                   "output types clients may ask for",
                        "responses": {"200": _json("ok")}}},
    "/runs": {
        "get": {"summary": "The runs this process holds (live and recently finished)",
                "responses": {"200": _json("runs")}},
        "post": {
            "summary": "Start a run (a new session, or continue one with session_id)",
            "requestBody": _body({
                "prompt": {**_STR, "description": "the task; may be empty when continuing"},
                "session_id": {**_STR, "description": "a stored session (or unique prefix)"},
                "model": {**_STR, "description": "model, alias or provider:model"},
                "tools": {"type": "array", "items": _STR,
                          "description": "a subset of the server's tools"},
                "output_type": {**_STR, "description": (
                    "a typed output the server was started with (--output-type NAME=…; "
                    "GET /health lists them): the run's result output is the validated "
                    "object; an unknown name is a 400 naming the known ones")},
                "stop_when_last_client_leaves": {"type": "boolean", "default": False},
            }),
            "responses": {"201": _json("started", {"type": "object", "properties": {
                "run_id": _STR, "session_id": _STR, "events": _STR,
                "context_window": {"type": ["integer", "null"]}}}),
                "400": _ERROR, "404": _ERROR, "409": _ERROR}}},
    "/runs/{run_id}": {"get": {"summary": "One run's state and prompt; once ended, its "
                                          "output (the validated object with an "
                                          "output_type) and error",
                               "parameters": [_RUN_ID],
                               "responses": {"200": _json("run"), "404": _ERROR}}},
    "/runs/{run_id}/events": {"get": {
        "summary": "The run's events as Server-Sent Events (the JSON of `run --json`); "
                   "resume with Last-Event-ID or ?after=N",
        "parameters": [_RUN_ID,
                       {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer"}},
                       {"name": "after", "in": "query", "schema": {"type": "integer"}}],
        "responses": {"200": {"description": "event stream",
                              "content": {"text/event-stream": {"schema": _STR}}},
                      "404": _ERROR}}},
    "/runs/news": {"get": {
        "summary": "Runs of this server starting and ending, as Server-Sent Events: each "
                   "`data:` is {type: run_started | run_finished, run: the run as GET "
                   "/runs/{run_id} shows it}; from now on, or after Last-Event-ID / ?after=N",
        "parameters": [{"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer"}},
                       {"name": "after", "in": "query", "schema": {"type": "integer"}}],
        "responses": {"200": {"description": "event stream",
                              "content": {"text/event-stream": {"schema": _STR}}}}}},
    "/runs/{run_id}/steer": {"post": {
        "summary": "Add a user message at the run's next turn", "parameters": [_RUN_ID],
        "requestBody": _body({"text": _STR}, ["text"]),
        "responses": {"202": _json("steered"), "404": _ERROR, "409": _ERROR}}},
    "/runs/{run_id}/cancel": {"post": {
        "summary": "Cancel the run (it ends with a `cancelled` event)", "parameters": [_RUN_ID],
        "responses": {"202": _json("cancelling"), "404": _ERROR, "409": _ERROR}}},
    "/runs/{run_id}/approvals": {"post": {
        "summary": "Answer an `approval_required` event: its call_id, whatever it holds",
        "parameters": [_RUN_ID],
        "requestBody": _body({"call_id": _STR,
                              "decision": {"enum": ["allow", "deny", "always"]}},
                             ["call_id", "decision"]),
        "responses": {"200": _json("answered"), "400": _ERROR, "404": _ERROR}}},
    "/runs/{run_id}/approvals/{call_id}": {"post": {
        "summary": "Answer an `approval_required` event by a call id a URL path can hold "
                   "(not `.` or `..`)",
        "parameters": [_RUN_ID, {"name": "call_id", "in": "path", "required": True,
                                 "schema": _STR}],
        "requestBody": _body({"decision": {"enum": ["allow", "deny", "always"]}},
                             ["decision"]),
        "responses": {"200": _json("answered"), "400": _ERROR, "404": _ERROR}}},
    "/sessions": {"get": {
        "summary": "Stored sessions, newest first; with q, full-text search",
        "parameters": [{"name": "q", "in": "query", "schema": _STR},
                       {"name": "model", "in": "query", "schema": _STR},
                       {"name": "limit", "in": "query", "schema": {"type": "integer"}}],
        "responses": {"200": _json("sessions")}}},
    "/sessions/{session_id}": {"get": {
        "summary": "One session: messages, events, per-turn usage, runs, sub-agent "
                   "sessions, and its model's context window when known",
        "parameters": [{"name": "session_id", "in": "path", "required": True, "schema": _STR}],
        "responses": {"200": _json("session"), "404": _ERROR}}},
    "/batches": {"get": {
        "summary": "The `loopwright batch` results the server shows (serve --batch DIR), by "
                   "number, each with its summary",
        "responses": {"200": _json("batches")}}},
    "/batches/{number}": {"get": {
        "summary": "One batch: its summary and the latest row of every task (status, "
                   "verdict, turns, cost, error, session_id)",
        "parameters": [{"name": "number", "in": "path", "required": True,
                        "schema": {"type": "integer"}}],
        "responses": {"200": _json("batch"), "404": _ERROR}}},
    "/login": {"post": {
        "summary": "The page's login: with the server's token, a login token of its own, "
                   "which POST /logout ends (the page keeps that, never the server's)",
        "responses": {"201": _json("{token}"), "403": _ERROR}}},
    "/logout": {"post": {
        "summary": "End the page's login whose token this request carries: the server refuses "
                   "it from now on and ends the event streams opened with it",
        "responses": {"200": _json("{logged_out: true}"), "400": _ERROR}}},
    "/openapi.json": {"get": {"summary": "This description",
                              "responses": {"200": _json("OpenAPI document")}}},
    "/docs": {"get": {"summary": "This description as a page",
                      "responses": {"200": {"description": "HTML"}}}},
    "/": {"get": {"summary": "The web page (the printed link, /#token=TOKEN, logs it in)",
                  "responses": {"200": {"description": "HTML"}}}},
}


def openapi_document(version: str) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "loopwright serve", "version": version,
                 "description": "Start, watch, steer and approve agent runs; browse sessions. "
                                "Every route needs `Authorization: Bearer TOKEN`."},
        "paths": PATHS,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": {"type": "object", "properties": {"error": _STR},
                                  "required": ["error"]}},
        },
        "security": [{"bearer": []}],
    }
