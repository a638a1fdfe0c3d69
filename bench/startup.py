"""Start-up cost: `import loopwright`, `from loopwright import Agent` and the `loopwright`
command against a bare interpreter, and `loopwright run` up to its first model request.

Each command runs N times as a fresh subprocess; prints the median wall time and the median CPU
(user + system of the child) per command, and the cost over the bare interpreter. Then
`loopwright run` against a fake model server (in this process): the child's CPU (from
/proc/<pid>/stat, 10 ms ticks) and the wall time when its first model request arrives, after
the window probe and the provider check. `--instructions` adds each import's instruction count
under callgrind (steady under load, unlike CPU time; ~30 s each), and that of a whole
`loopwright run` that gets one answer (to its exit: callgrind cannot stop at the first request).
Targets (issue 31): `from loopwright import Agent` <= 80 ms CPU; `loopwright run` <= 300 ms CPU to
its first model request.

    python bench/startup.py            # N = 21
    python bench/startup.py -n 51 --instructions
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from loopwright.testing import FakeModelServer, RecordedRequest, Reply

TICKS = os.sysconf("SC_CLK_TCK")


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


def process_cpu(pid: int) -> float:
    """User + system seconds of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def first_request(cli: str, runs: int) -> tuple[float, float, int]:
    """(median ms CPU, median ms wall, requests before it) of `loopwright run` until its first
    model request reaches the server."""
    cpus, walls = [], []
    before = 0
    for _ in range(runs):
        child: dict[str, int] = {}
        seen: dict[str, float] = {}
        arrived = threading.Event()

        def reply(request: RecordedRequest, child: dict[str, int] = child,
                  seen: dict[str, float] = seen, arrived: threading.Event = arrived) -> Reply:
            if not arrived.is_set():
                seen["cpu"], seen["wall"] = process_cpu(child["pid"]), time.perf_counter()
                arrived.set()
            return Reply("ok")

        with FakeModelServer(handler=reply) as server, \
                tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": home, "XDG_DATA_HOME": home,
                   "XDG_CACHE_HOME": home}
            started = time.perf_counter()
            proc = subprocess.Popen([cli, "run", "--model", "bench-model", "--base-url",
                                     server.base_url, "--api-key", "k", "hi"], env=env, cwd=home,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            child["pid"] = proc.pid
            proc.wait(timeout=120)
            before = len(server.requests) - len(server.model_requests)
        if not arrived.is_set():
            raise RuntimeError("loopwright run sent no model request")
        cpus.append(1000 * seen["cpu"])
        walls.append(1000 * (seen["wall"] - started))
    return statistics.median(cpus), statistics.median(walls), before


def instructions(code: str) -> int:
    """Instructions (callgrind) of `python -c code`."""
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                          sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))  # type: ignore[union-attr]


def run_instructions(cli: str) -> int:
    """Instructions (callgrind) of `loopwright run "hi"` to its exit, one answer from the fake
    server (in this process, not counted)."""
    code = f"import sys; sys.argv = ['loopwright', *sys.argv[1:]]; exec(open({cli!r}).read())"
    with FakeModelServer([Reply("ok")]) as server, tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "HOME": home, "XDG_CONFIG_HOME": home, "XDG_DATA_HOME": home,
               "XDG_CACHE_HOME": home}
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              sys.executable, "-c", code, "run", "--model", "bench-model",
                              "--base-url", server.base_url, "--api-key", "k", "hi"],
                             capture_output=True, text=True, check=True, env=env, cwd=home)
    return int(re.search(r"Collected : (\d+)", out.stderr).group(1))  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=21, help="runs per command")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each import's instructions under callgrind")
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
    cpu, wall, probes = first_request(cli, max(3, args.n // 3))
    print(f"\n`loopwright run` to its first model request: {cpu:.0f} ms CPU, {wall:.0f} ms wall "
          f"(median; {probes} request(s) before it)")
    if args.instructions:
        print("\n| import | instructions | over bare python |\n|---|---|---|")
        bare = instructions("pass")
        for code in ("pass", "import loopwright", "from loopwright import Agent"):
            count = instructions(code)
            print(f"| `{code}` | {count / 1e6:.0f} M | {(count - bare) / 1e6:+.0f} M |")
        count = run_instructions(cli)
        print(f"| `loopwright run hi` (to its exit) | {count / 1e6:.0f} M "
              f"| {(count - bare) / 1e6:+.0f} M |")
    print(f"load average: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
