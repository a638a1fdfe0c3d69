"""Start-up cost: `import loopwright` and the `loopwright` command, against a bare interpreter.

Each command runs N times as a fresh subprocess; prints the median wall time and the median CPU
(user + system of the child) per command, and the import's cost over the bare interpreter.
Targets (idle machine): `import loopwright` < 150 ms, `loopwright --version` < 300 ms wall.

    python bench/startup.py            # N = 21
    python bench/startup.py -n 51
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import time


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(command: list[str], runs: int) -> tuple[float, float]:
    """(median wall ms, median CPU ms) of `command` over `runs` runs."""
    walls, cpus = [], []
    for _ in range(runs):
        cpu, wall = children_cpu(), time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        walls.append(1000 * (time.perf_counter() - wall))
        cpus.append(1000 * (children_cpu() - cpu))
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=21, help="runs per command")
    args = parser.parse_args()
    cli = shutil.which("loopwright") or "loopwright"
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import loopwright": [sys.executable, "-c", "import loopwright"],
        "from loopwright import Agent": [sys.executable, "-c", "from loopwright import Agent"],
        "loopwright --version": [cli, "--version"],
        "loopwright --help": [cli, "--help"],
    }
    results = {label: measure(command, args.n) for label, command in commands.items()}
    bare_wall, bare_cpu = results["python -c pass"]
    print(f"median of {args.n} runs each")
    print("| command | wall | CPU | wall over bare python | CPU over bare python |")
    print("|---|---|---|---|---|")
    for label, (wall, cpu) in results.items():
        print(f"| `{label}` | {wall:.0f} ms | {cpu:.0f} ms | {wall - bare_wall:+.0f} ms "
              f"| {cpu - bare_cpu:+.0f} ms |")


if __name__ == "__main__":
    main()
