"""Build the API reference: HTML pages generated from the docstrings of the public modules.

    python docs/api_reference.py            # into docs/api/ (not kept in git)
    python docs/api_reference.py /tmp/api

pdoc builds it: it reads the docstrings and type annotations of the live modules (no separate
doc sources to keep in step with the code), follows `__all__`, needs no configuration, and is
one small, well-kept package (`pip install -e ".[dev]"`). tests/test_api_reference.py builds it
on every test run, so a docstring or annotation it cannot render fails CI.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

MODULES = (
    "loopwright",  # Agent, tool, ToolContext, RunResult, the events, errors, … (its `__all__`)
    "loopwright.settings",  # Settings and AgentOptions: every setting, by concern
    "loopwright.events",
    "loopwright.plugins",  # LoopPlugin and RunView: what a plugin sees
    "loopwright.review",  # Check, ReviewView and the verdicts: a review check of your own
    "loopwright.testing",  # the fake model server, public for users' own tests
    "loopwright.batch",  # run_batch
)
"""The public modules, each a page."""


def build(out: Path) -> subprocess.CompletedProcess[str]:
    """Write the reference into `out`; pdoc's output (its warnings) is in the result."""
    return subprocess.run([sys.executable, "-m", "pdoc", "--no-show-source", "-o", str(out),
                           *MODULES], capture_output=True, text=True, check=False, timeout=600)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", type=Path, default=Path(__file__).parent / "api")
    args = parser.parse_args()
    result = build(args.out)
    sys.stderr.write(result.stdout + result.stderr)
    if result.returncode != 0:
        raise SystemExit(result.returncode)
    print(f"API reference in {args.out}/index.html")


if __name__ == "__main__":
    main()
