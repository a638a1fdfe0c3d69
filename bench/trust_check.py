"""Cost of the trust check on a project's content (issue 29): `prompt_content_trusted`, which
every agent runs when it is made (skills) and before each run (instruction files): it lists the
project's instruction files and skills, hashes them and reads the trust file.

Three projects in a temporary directory: none of those files, an AGENTS.md and SKILLS skills
(trusted), the same untrusted. Prints the median time per check over N checks for each.

    python bench/trust_check.py            # N = 200, SKILLS = 20
    python bench/trust_check.py -n 500 --skills 100
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path


def make_project(root: Path, skills: int) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Use tabs.\n" * 200)
    for n in range(skills):
        folder = root / ".claude" / "skills" / f"skill-{n:03d}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: skill-{n}\ndescription: does {n}\n---\n"
                                         + "Step.\n" * 100)
    return root


def median_ms(check: Callable[[Path], bool], project: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        check(project)
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-n", type=int, default=200, help="checks per project")
    parser.add_argument("--skills", type=int, default=20, help="skills in the project")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        os.environ["XDG_CONFIG_HOME"] = str(Path(temp) / "config")  # a trust file of our own
        from loopwright.trust import TrustStore, project_digest, prompt_content_trusted

        bare = Path(temp) / "bare"
        (bare / ".git").mkdir(parents=True)
        trusted = make_project(Path(temp) / "trusted", args.skills)
        untrusted = make_project(Path(temp) / "untrusted", args.skills)
        TrustStore().trust(trusted.resolve(), project_digest(trusted))
        warnings.simplefilter("ignore")
        for name, project in (("no instruction files or skills", bare),
                              (f"AGENTS.md + {args.skills} skills, trusted", trusted),
                              (f"AGENTS.md + {args.skills} skills, untrusted", untrusted)):
            print(f"{name:<40} {median_ms(prompt_content_trusted, project, args.n):7.3f} ms "
                  "per check (median)")


if __name__ == "__main__":
    main()
