"""Every Python snippet of README.md and docs/*.md is (part of) a runnable file under examples/,
and each one runs here, as a real program in its own process, against the fake model server
(settings from LOOPWRIGHT_* variables, as a user's would come from their environment)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import loopwright.testing
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
    "word_count.py": (
        [Reply(tool_calls=[call("word_count", {"text": "the quick brown fox"})]), Reply("4")],
        ["4"]),
    "review_check.py": ([Reply("It listens on 8080."), Reply("README.md: port 8080")],
                        ["README.md: port 8080"]),
    "idempotent_tool.py": (
        [Reply(tool_calls=[call("send_invoice", {"customer": "ACME", "amount": 120})]),
         Reply("Invoice 1 sent.")],
        ["Invoice 1 sent.", "already sent: invoice 1"]),
}
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(language: str, document: Path) -> list[str]:
    text = document.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_every_example_has_a_script_here() -> None:
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(SCRIPTS)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_every_python_snippet_of_the_docs_is_in_an_example_file(document: Path) -> None:
    """docs/testing.md's snippet used a tool it never defined, and asserted a role the request
    did not have; docs/settings.md's review check failed `mypy --strict`: neither ran here."""
    sources = [p.read_text(encoding="utf-8") for p in EXAMPLES.glob("*.py")]
    for block in blocks("python", document):
        assert any(block.strip() in source for source in sources), (
            f"{document.name}: snippet not found verbatim in examples/: {block[:80]!r}")


def test_the_testing_modules_own_example_is_the_example_file() -> None:
    doc = loopwright.testing.__doc__ or ""
    example = re.search(r"^    with FakeModelServer.*?^    print", doc, re.MULTILINE | re.DOTALL)
    assert example is not None
    source = (EXAMPLES / "testing_your_agent.py").read_text(encoding="utf-8")
    assert textwrap.dedent(example.group(0)) in source


def test_every_guide_toml_snippet_is_a_valid_config(tmp_path: Path) -> None:
    for block in blocks("toml", ROOT / "docs" / "guide.md"):
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
