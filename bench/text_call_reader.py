"""Instructions (callgrind) per reply of the check that decides whether a reply's text is read
as tool calls (`review.plan.text_call_reader`, asked once per reply): a small local model (its
profile says so) and a model no profile knows on a vLLM server (the server's kind, kept per base
URL and credentials, decides), each with a key and an extra header on its endpoint.

The child warms up (imports, the listing that records the server's kind, a first check), then
counts `--replies` checks only, through callgrind's client request (`instructions.build_toggle`).
Run it against another tree with `PYTHONPATH=that/src` to compare.

    python bench/text_call_reader.py                 # both models, 2,000 replies each

2026-11-29, per reply: 270,224 -> 13,247 instructions (small local), 270,132 -> 13,575 (unknown
on vLLM) once the credentials' digest is kept per endpoint (`servers.endpoint_kind`) instead of
worked out from the URL and headers (normalised, shown, sorted, SHA-256) on every reply.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from instructions import _dumped_total, build_toggle

MODELS = {"small local": "qwen2.5-coder:1.5b", "unknown on vLLM": "house-model"}
REPLIES = 2_000


async def child(args: argparse.Namespace) -> None:
    from loopwright.endpoints.client import ModelClient
    from loopwright.endpoints.fallback import ProviderChain
    from loopwright.endpoints.resolve import resolve_model
    from loopwright.endpoints.servers import fetch_listing
    from loopwright.profiles import profile_for
    from loopwright.review.plan import text_call_reader
    from loopwright.settings import Settings
    from loopwright.testing import FakeModelServer
    from loopwright.wire import get_wire_format

    helper = ctypes.CDLL(args.toggle)
    with FakeModelServer(flavor="vllm", context_window=8_192) as server:
        resolved = resolve_model(args.model, base_url=server.base_url, api_key="sk-bench-key",
                                 environ={})
        resolved.endpoint.headers["x-tenant"] = "bench"
        headers = resolved.endpoint.request_headers()
        listing = await fetch_listing(server.base_url, headers=headers, timeout=120)  # (valgrind)
        assert listing.kind == "vllm"
    client = ModelClient(endpoint=resolved.endpoint, wire=get_wire_format(resolved.mode),
                         model=resolved.model, profile=profile_for(resolved.model))
    reads = text_call_reader(Settings(), ProviderChain(clients=[client]), prompt_mode=False)
    assert reads is not None and reads()  # both models have their text read
    helper.toggle()
    for _ in range(args.replies):
        reads()
    helper.toggle()
    helper.dump()


def measure(model: str, toggle: Path, replies: int) -> float:
    """Instructions per reply of `model`'s check."""
    with tempfile.TemporaryDirectory() as scratch:
        out_file = Path(scratch) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
                   f"--callgrind-out-file={out_file}", sys.executable, __file__, "--child",
                   "--toggle", str(toggle), "--model", model, "--replies", str(replies)]
        subprocess.run(command, capture_output=True, text=True, check=True)
        return _dumped_total(Path(f"{out_file}.1")) / replies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--toggle", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--replies", type=int, default=REPLIES)
    args = parser.parse_args()
    if args.child:
        asyncio.run(child(args))
        return
    with tempfile.TemporaryDirectory() as scratch:
        toggle = build_toggle(Path(scratch))
        for label, model in MODELS.items():
            per_reply = measure(model, toggle, args.replies)
            print(f"{label:<16} {model:<20} {per_reply:,.0f} instructions per reply")


if __name__ == "__main__":
    main()
