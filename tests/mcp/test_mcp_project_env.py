"""`${VAR}` in a project's `mcp_servers` hands the user's environment to a server: by design
once the user trusts the project, and only the variables it names. Through `loopwright run`
and `loopwright trust` in a project directory whose `loopwright.toml` configures
`hostile_server.py env` (it answers with its environment)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hostile_helpers import HANG_GUARD, HOSTILE

from loopwright.testing import FakeModelServer, Reply, call

CONFIG = f"""
[mcp_servers.h]
command = {json.dumps(sys.executable)}
args = [{json.dumps(HOSTILE)}, "env"]
env = {{ GIVEN = "${{LW_NAMED}}", FIXED = "plain", EMPTY = "${{LW_NOT_SET}}" }}
"""
SECRETS = {"LW_NAMED": "canary-named", "LW_UNNAMED": "canary-unnamed",
           "OPENAI_API_KEY": "sk-canary-9"}


def loopwright(project: Path, *args: str, model: FakeModelServer | None = None
               ) -> subprocess.CompletedProcess[str]:
    environ = {**{k: v for k, v in os.environ.items() if not k.startswith("LOOPWRIGHT_")},
               **SECRETS}
    environ.pop("LW_NOT_SET", None)
    served = ["--model", "m", "--base-url", model.base_url, "--api-key", "k"] if model else []
    return subprocess.run([sys.executable, "-m", "loopwright", *args, *served], cwd=project,
                          env=environ, capture_output=True, text=True, timeout=HANG_GUARD,
                          stdin=subprocess.DEVNULL)


def test_a_projects_server_gets_the_variables_it_names_once_trusted(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "loopwright.toml").write_text(CONFIG)
    script = [Reply(tool_calls=[call("mcp__h__attack", {})]), Reply("untrusted done"),
              Reply(tool_calls=[call("mcp__h__attack", {})]), Reply("trusted done")]
    with FakeModelServer(replies=script) as model:
        untrusted = loopwright(project, "run", "go", model=model)
        trusted = loopwright(project, "trust")
        after = loopwright(project, "run", "go", model=model)
        tools = [{t["function"]["name"] for t in r.body.get("tools") or []}
                 for r in model.model_requests]
        answers = [m["content"] for r in model.model_requests for m in r.body["messages"]
                   if m["role"] == "tool"]
    assert untrusted.returncode == 0, untrusted.stderr
    assert "mcp_servers" in untrusted.stderr and "loopwright trust" in untrusted.stderr
    assert "mcp__h__attack" not in tools[0]  # untrusted: not started, so handed nothing
    assert answers[0].startswith("Error: there is no tool named 'mcp__h__attack'")
    assert trusted.returncode == 0, trusted.stderr
    assert after.returncode == 0, after.stderr
    assert "mcp__h__attack" in tools[2]
    environment = json.loads(answers[-1])
    assert environment["GIVEN"] == "canary-named" and environment["FIXED"] == "plain"
    assert environment["EMPTY"] == ""  # a variable that is not set is handed over empty
    assert not {"LW_NAMED", "LW_UNNAMED", "OPENAI_API_KEY"} & set(environment)
    assert not {"canary-unnamed", "sk-canary-9"} & set(environment.values())
    assert "PATH" in environment  # and the SDK's short list of inherited variables
