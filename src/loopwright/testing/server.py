"""The fake model server, and its subprocess entry point.

    python -m loopwright.testing.server --script script.json [--port N] [--context-window N]
        [--flavor openai|ollama|llamacpp|lmstudio|vllm] [--model NAME] [--repeat]

prints `READY http://127.0.0.1:PORT/v1` on stdout once it listens, then serves until killed.
`script.json` is a JSON list of replies and faults in the form read by `load_script`.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Sequence
from typing import get_args

from loopwright.testing._server import FakeModelServer, Flavor, fake_server
from loopwright.testing.scripted import load_script

__all__ = ["FakeModelServer", "Flavor", "fake_server", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a JSON script until SIGINT or SIGTERM."""
    args = _parser().parse_args(argv)
    script = load_script(args.script) if args.script else []
    server = FakeModelServer(
        script,
        repeat=args.repeat,
        context_window=args.context_window,
        flavor=args.flavor,
        model=args.model,
        port=args.port,
        record_requests=not args.repeat,  # a looping benchmark server must not grow forever
    )
    # SIGTERM (what Popen.terminate sends) should stop the server as cleanly as Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with server:
        print(f"READY {server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m loopwright.testing.server",
        description="Serve scripted model replies over real HTTP (Chat Completions, "
        "Anthropic Messages, Responses).",
    )
    parser.add_argument("--script", help="JSON file: a list of replies and faults")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: free)")
    parser.add_argument("--context-window", type=int, default=None, help="window the probes report")
    parser.add_argument("--flavor", choices=get_args(Flavor), default="openai")
    parser.add_argument("--model", default="fake-model", help="model id listed by /v1/models")
    parser.add_argument("--repeat", action="store_true", help="loop the script forever")
    return parser


if __name__ == "__main__":
    sys.exit(main())
