"""Every snippet of docs/guide.md is a runnable file under examples/, and each one runs here, as
a real program in its own process, against the fake model server (settings from LOOPWRIGHT_*
variables, as a user's would come from their environment)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.config import load_settings
from loopwright.testing import FakeModelServer, Reply, ScriptItem, call

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

# per example: the model's replies, and lines its output must contain
SCRIPTS: dict[str, tuple[list[ScriptItem], list[str]]] = {
    "quickstart.py": (
        [Reply(tool_calls=[call("add", {"a": 2, "b": 3})]), Reply("5"), Reply("9"), Reply("13")],
        ["5 completed", "9", "13"]),
    "structured_output.py": (
        [Reply(tool_calls=[call("population", {"city": "Lyon"})]),
         Reply('{"city": "Lyon", "population": 522250, "summary": "third city of France"}')],
        ["Lyon 522250 third city of France"]),
    "testing_your_agent.py": ([], ["ok"]),  # runs a fake server of its own
    "images.py": ([Reply("sales rising")], ["sales rising"]),
    "batch.py": ([Reply("5")], ["100% solved"]),
}


def guide_blocks(language: str) -> list[str]:
    text = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_every_example_has_a_script_here() -> None:
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(SCRIPTS)


def test_every_guide_python_snippet_is_an_example_file() -> None:
    sources = {p.name: p.read_text(encoding="utf-8") for p in EXAMPLES.glob("*.py")}
    blocks = guide_blocks("python")
    assert blocks, "the guide has no python snippets?"
    for block in blocks:
        assert any(block.strip() in source for source in sources.values()), (
            f"guide snippet not found verbatim in examples/: {block[:80]!r}")


def test_every_guide_toml_snippet_is_a_valid_config(tmp_path: Path) -> None:
    for block in guide_blocks("toml"):
        (tmp_path / "loopwright.toml").write_text(block, encoding="utf-8")
        with pytest.warns(UserWarning, match="not trusted"):  # a project file: not trusted
            load_settings(cwd=tmp_path, environ={})


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_example_runs(name: str, tmp_path: Path) -> None:
    script, expected = SCRIPTS[name]
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("LOOPWRIGHT_", "XDG_", "OPENAI", "ANTHROPIC", "OPENROUTER"))}
    with FakeModelServer(script) as server:
        env.update(HOME=str(tmp_path), LOOPWRIGHT_BASE_URL=server.base_url,
                   LOOPWRIGHT_API_KEY="test-key")
        done = subprocess.run([sys.executable, str(EXAMPLES / name)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for line in expected:
        assert line in lines, done.stdout
