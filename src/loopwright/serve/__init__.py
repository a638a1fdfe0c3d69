"""`loopwright serve`: runs over HTTP — start, watch (Server-Sent Events of the same JSON events as
`loopwright run --json`), steer, cancel, approve dangerous calls — plus the stored sessions and a
web page to do all of it from a browser. `create_app()` builds the ASGI app (`serve/app.py`);
`loopwright.cli.serve` runs it on uvicorn.
"""

DEFAULT_APPROVAL_TIMEOUT = 60.0  # seconds an approval waits for an answer, then the call is denied
