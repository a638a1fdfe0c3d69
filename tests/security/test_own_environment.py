"""The Python environment loopwright itself runs in is not the sandbox's to change. A project's
`.venv` inside the workspace is the usual place for it (`uv run loopwright`, `pip install` in the
project's venv); a `.pth` file or a module written there by a sandboxed command runs outside the
sandbox, with the user's rights, at loopwright's next start — or at once, in this process, when
loopwright imports a module on first use. Other environments in the workspace stay the work's.

Real bubblewrap, a real virtual environment and the real CLI, started from that environment."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import loopwright
from loopwright.testing import FakeModelServer, Reply, call

pytestmark = pytest.mark.usefixtures("needs_bwrap")


def make_venv(where: Path) -> Path:
    """A virtual environment (no pip: quick); its site-packages directory."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True,
                   capture_output=True, timeout=60)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return where / "lib" / version / "site-packages"


def run_from(venv: Path, workdir: Path, server: FakeModelServer
             ) -> subprocess.CompletedProcess[str]:
    """`loopwright run --yes` started by `venv`'s Python (this checkout and its dependencies
    on the path, as an editable install would give them)."""
    source = Path(loopwright.__file__).resolve().parent.parent
    environ = {k: v for k, v in os.environ.items() if not k.startswith("LOOPWRIGHT_")}
    environ["PYTHONPATH"] = os.pathsep.join([str(source), sysconfig.get_paths()["purelib"]])
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "loopwright", "run", "go", "--yes", "--model", "m",
         "--base-url", server.base_url, "--api-key", "k"],
        cwd=workdir, env=environ, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL)


def plant(site_packages: Path, canary: Path) -> str:
    return (f"echo 'import pathlib; pathlib.Path(\"{canary}\").touch()' > "
            f"{site_packages}/planted.pth; echo '# mine' >> {site_packages}/_virtualenv.py; "
            f"ls {site_packages}")


def test_a_pth_file_cannot_be_planted_in_loopwrights_own_environment(
        tmp_path: Path, canary: Path) -> None:
    workdir = tmp_path / "project"
    workdir.mkdir()
    site_packages = make_venv(workdir / ".venv")
    script = [Reply(tool_calls=[call("bash", {"command": plant(site_packages, canary)})]),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        done = run_from(workdir / ".venv", workdir, server)
        [body] = [r.body or {} for r in server.model_requests][1:2]
    assert done.returncode == 0, done.stderr
    [result] = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    assert "Read-only file system" in result, result
    assert not (site_packages / "planted.pth").exists()
    subprocess.run([str(workdir / ".venv" / "bin" / "python"), "-c", "pass"], check=True)
    assert not canary.exists()


def test_another_environment_in_the_workspace_stays_writable(
        tmp_path: Path, canary: Path) -> None:
    # must not fire: the project's other venvs are the work's (a tox or nox env, a second venv)
    workdir = tmp_path / "project"
    workdir.mkdir()
    running = make_venv(tmp_path / "loopwrights-own")
    other = make_venv(workdir / "env")
    script = [Reply(tool_calls=[call("bash", {"command": f"touch {other}/mine.pth && echo ok"})]),
              Reply(text="done")]
    with FakeModelServer(replies=script) as server:
        done = run_from(running.parent.parent.parent, workdir, server)
    assert done.returncode == 0, done.stderr
    assert (other / "mine.pth").exists()


async def test_file_tools_ask_before_writing_in_loopwrights_own_environment(
        tmp_path: Path) -> None:
    # this process's own environment, reached as an allowed root; the user says no
    from loopwright import Agent
    from loopwright.builtin import default_tools

    asked: list[str] = []

    def approval(action: str, detail: str) -> bool:
        asked.append(detail)
        return False

    target = Path(sys.prefix) / f"loopwright-probe-{os.getpid()}.txt"
    script = [Reply(tool_calls=[call("write_file", {"path": str(target), "content": "x"})]),
              Reply(text="done")]
    try:
        with FakeModelServer(replies=script) as server:
            agent = Agent("m", base_url=server.base_url, api_key="k", tools=default_tools(),
                          workdir=str(tmp_path), allowed_roots=[sys.prefix], approval=approval)
            await agent.run("go")
        assert not target.exists()
        assert any("Python environment loopwright runs in" in detail for detail in asked), asked
    finally:
        target.unlink(missing_ok=True)
