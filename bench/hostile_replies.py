"""CPU time of reading what a hostile or broken server sends where a model API should answer,
at growing sizes: the digits an overflow error echoes (`probe.window_from_error`, on the first
65,536 characters), an Ollama `/api/show` of blank parameter lines (`probe._from_ollama_show`),
and a page of unclosed tags (`pages.page_extract`). Each read once took quadratic time; the tests
(tests/endpoints: `cpu_growth`) check the growth, this prints the figures.

    python bench/hostile_replies.py          # the least of 5 reads at each size
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from loopwright.endpoints.pages import page_extract
from loopwright.endpoints.probe import _from_ollama_show, window_from_error

READERS: dict[str, Callable[[int], object]] = {
    "overflow digits": lambda n: window_from_error("context length exceeded: " + "7" * n),
    "ollama blank lines": lambda n: _from_ollama_show(
        {"parameters": "\n" * n + 'stop "<|im_end|>"'}, "m"),
    "unclosed <title>": lambda n: page_extract("<html><body><h1>x</h1>" + "<title>" * n),
    "unclosed <script>": lambda n: page_extract("<html><body><h1>x</h1>" + "<script>" * n),
    "unclosed <": lambda n: page_extract("<html><body><h1>x</h1>" + "<" * n),
}
SIZES = (8_000, 64_000, 512_000)


def least_cpu(read: Callable[[int], object], size: int, tries: int) -> float:
    costs = []
    for _ in range(tries):
        started = time.process_time()
        read(size)
        costs.append(time.process_time() - started)
    return min(costs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=5)
    tries = parser.parse_args().tries
    print("| reading | " + " | ".join(f"{size:,}" for size in SIZES) + " |")
    print("|---|" + "---:|" * len(SIZES))
    for name, read in READERS.items():
        cells = [f"{least_cpu(read, size, tries) * 1000:.2f} ms" for size in SIZES]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
