"""`--local` on the commands an editor or another agent starts: `acp` and `mcp-server` offer the
flag (they take `run`'s flags) and must run the embedded model with it, not ignore it and look for
a provider elsewhere. Real llama.cpp, the 1.5B weights; no generation needed to tell."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block
from acp.schema import ClientCapabilities

from loopwright.local import DEFAULT_MODEL
from loopwright.local.server import xllamacpp_importable
from loopwright.local.weights import model_spec, models_dir, weights_present
from shared_helpers import cli_env, require_component

MODELS_DIR = models_dir()  # at import: an autouse fixture points XDG_CACHE_HOME elsewhere
HOW = ("--local needs llama.cpp and the 1.5B weights: pip install -e '.[local]' && "
       "python -m loopwright.testing.llamacpp fetch --model 1.5b")
MODEL = "qwen2.5-coder-1.5b-instruct"

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(300)]


@pytest.fixture
def local_env(tmp_path: Path) -> dict[str, str]:
    require_component(weights_present(model_spec(DEFAULT_MODEL), MODELS_DIR)
                      and xllamacpp_importable(), HOW)
    return cli_env(tmp_path, LOOPWRIGHT_MODELS_DIR=str(MODELS_DIR))


class _Editor:
    def __init__(self) -> None:
        self.said: list[str] = []

    async def session_update(self, session_id: str, update: object, **kwargs: object) -> None:
        text = getattr(getattr(update, "content", None), "text", None)
        if isinstance(text, str):
            self.said.append(text)


async def test_acp_local_talks_to_the_embedded_model(tmp_path: Path,
                                                     local_env: dict[str, str]) -> None:
    editor = _Editor()
    log = tmp_path / "acp-stderr.log"
    with log.open("wb") as stderr:
        async with spawn_agent_process(
                editor, sys.executable, "-m", "loopwright", "acp", "--local", env=local_env,
                transport_kwargs={"stderr": stderr.fileno()}) as (conn, _process):
            await conn.initialize(protocol_version=PROTOCOL_VERSION,
                                  client_capabilities=ClientCapabilities())
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            await conn.prompt(session_id=session, prompt=[text_block("/model")])
    assert editor.said and editor.said[-1].startswith(f"{MODEL} at http://127.0.0.1:")
    assert "ready on llama.cpp" in log.read_text()  # on stderr: stdout is the protocol's


def test_mcp_server_local_starts_the_embedded_model(tmp_path: Path,
                                                    local_env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "loopwright", "mcp-server", "--local"],
                          input="", env=local_env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=240)  # stdin closed at once: it ends
    assert "ready on llama.cpp" in done.stderr, done.stderr
    assert done.stdout == ""
