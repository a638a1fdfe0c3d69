"""Start-up stays cheap: `import loopwright` loads none of the heavy parts (MCP, the CLI
framework, rich, httpx's own CLI) until they are used, and the public names still resolve."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import loopwright

HEAVY = ("mcp", "rich", "typer", "click", "pygments", "httpx", "loopwright.agent")
# what the agent uses only once it runs (or only when configured)
RUN_TIME = ("loopwright.mcp", "loopwright.context.compaction", "loopwright.safety.shell.parse",
            "loopwright.safety.policy", "loopwright.grading", "loopwright.wire.text_calls")


def modules_loaded_by(code: str, watched: tuple[str, ...] = HEAVY) -> list[str]:
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps([m for m in {list(watched)!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_loopwright_loads_nothing_heavy() -> None:
    assert modules_loaded_by("import loopwright") == []


def test_the_agent_class_loads_no_http_client_until_a_request() -> None:
    """Issue 31: httpx (and the urllib.request, email and http.cookiejar it pulls in) was a
    fifth of `from loopwright import Agent`; it is loaded by the first request."""
    loaded = modules_loaded_by("from loopwright import Agent")
    assert "loopwright.agent" in loaded and "httpx" not in loaded
    ran = modules_loaded_by(PLAIN_RUN)
    assert "httpx" in ran and not {"rich", "pygments", "typer", "mcp"} & set(ran)


def test_the_agent_class_loads_no_pydantic_until_a_tool_is_made() -> None:
    """Issue 31: pydantic and pydantic_core (a third of `from loopwright import Agent`, 138 M
    instructions) were imported by the tool model and the result; they load with the first
    tool made from a function, whose schema and validator pydantic builds."""
    watched = ("pydantic", "pydantic_core")
    assert modules_loaded_by("from loopwright import Agent", watched) == []
    assert modules_loaded_by("from loopwright import Agent, tool\n"
                             "@tool\ndef add(a: int, b: int) -> int:\n    return a + b\n",
                             watched) == list(watched)


def test_the_agent_class_loads_no_runtime_until_an_agent_is_made() -> None:
    """Issue 31: the settings, endpoints, loop, hooks and tool executor (half of
    `from loopwright import Agent`'s instructions, each dataclass a few million of generated
    code) load with the first `Agent` made, not with the class."""
    runtime = ("loopwright.config", "loopwright.settings", "loopwright.loop",
               "loopwright.run_state", "loopwright.events", "loopwright.hooks",
               "loopwright.endpoints.client", "loopwright.tools.execute",
               "loopwright.store.services")
    assert modules_loaded_by("from loopwright import Agent", runtime) == []
    made = modules_loaded_by("from loopwright import Agent\n"
                             "Agent('m', base_url='http://127.0.0.1:9/v1', api_key='k')", runtime)
    assert {"loopwright.config", "loopwright.settings", "loopwright.hooks",
            "loopwright.store.services"} <= set(made)


def test_the_agent_class_loads_no_part_it_needs_only_to_run() -> None:
    assert modules_loaded_by("from loopwright import Agent", RUN_TIME) == []
    loaded = modules_loaded_by("from loopwright import Agent\n"
                               "Agent('m', base_url='http://127.0.0.1:9/v1', api_key='k')",
                               RUN_TIME)
    assert "loopwright.safety.policy" in loaded  # the probe can see a part being loaded


GRAMMAR = ("tree_sitter", "tree_sitter_bash")


def test_the_bash_grammar_loads_with_the_first_command_it_reads() -> None:
    """Issue 31: the shell policy is imported by every agent (and the CLI before its first
    request), the tree-sitter bash grammar only by the first command the policy reads."""
    policy = ("from loopwright.safety.policy import Policy\n"
              "from loopwright.safety.shell import classify_command\n")
    assert modules_loaded_by(policy, GRAMMAR) == []
    assert modules_loaded_by(policy + "classify_command('ls -la', cwd='/tmp')",
                             GRAMMAR) == list(GRAMMAR)


def test_every_public_name_resolves_to_its_home() -> None:
    from loopwright.agent import Agent
    from loopwright.tools.base import tool

    for name in loopwright.__all__:
        assert getattr(loopwright, name) is not None, name
    assert loopwright.Agent is Agent and loopwright.tool is tool
    assert set(loopwright.__all__) <= set(dir(loopwright))


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        loopwright.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("loopwright.NoSuchThing resolved")


def test_version_answers_without_the_cli_framework() -> None:
    probe = ("import sys\nsys.argv = ['loopwright', '--version']\n"
             "from loopwright.cli import main\nmain()\n"
             "print('typer' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.splitlines() == [f"loopwright {loopwright.__version__}", "False"]


PLAIN_RUN = """
from loopwright import Agent, tool
from loopwright.testing import FakeModelServer, Reply, call

@tool
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

@tool
async def twice(n: int) -> int:
    '''Double a number.'''
    return 2 * n

script = [Reply(tool_calls=[call("add", {"a": 2, "b": 3}), call("twice", {"n": 5})]),
          Reply("5 and 10")]
with FakeModelServer(script) as server:
    agent = Agent("m", base_url=server.base_url, api_key="k", tools=[add, twice], skills=False)
    assert agent.chat("2+3, twice 5?") == "5 and 10"
"""
OPTIONAL_PARTS = ("loopwright.safety.sandbox", "loopwright.skills", "loopwright.memory",
                  "loopwright.routing", "loopwright.mcp")


def loaded_packages(code: str, packages: tuple[str, ...]) -> list[str]:
    probe = (f"{code}\nimport sys, json\n"
             f"print(json.dumps(sorted(m for m in sys.modules "
             f"if m.startswith({packages!r}))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120)
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


# The trust check (issue 29) hashes a project's skill files before every run, whether skills
# are on or not, so it reads where they live from skills/discovery.py, and the skills package
# (its __init__ imports the skill tool's module) loads with it: only these may be loaded.
SKILLS_FOR_TRUST = {"loopwright.skills", "loopwright.skills.discovery",
                    "loopwright.skills.frontmatter", "loopwright.skills.tool"}


def test_a_run_with_plain_tools_loads_no_optional_part() -> None:
    """Sandbox, memory, routing and MCP are loaded by an agent that uses them only."""
    loaded = set(loaded_packages(PLAIN_RUN, OPTIONAL_PARTS))
    assert loaded - SKILLS_FOR_TRUST == set()


def test_the_optional_parts_load_when_the_agent_uses_them() -> None:
    """The check above can see each part: the same run, with each part switched on, loads it."""
    used = PLAIN_RUN.replace("Reply(\"5 and 10\")]", "Reply(\"5 and 10\"), Reply(\"nothing\")]")
    used = used.replace("skills=False)", "skills=True, sandbox_mode='read-only',"
                        " memory_learning=True, summary_model='m')")
    built_only = ("from loopwright import Agent\n"  # MCP servers connect at the first run
                  "Agent('m', base_url='http://127.0.0.1:9/v1', api_key='k', skills=False,"
                  " mcp_servers={'x': {'command': 'true'}})")
    names = loaded_packages(used, OPTIONAL_PARTS)
    loaded = {part.rsplit(".", 1)[1] for part in OPTIONAL_PARTS
              if any(name == part or name.startswith(part + ".") for name in names)}
    assert loaded == {"sandbox", "skills", "memory", "routing"}
    assert "loopwright.mcp" in loaded_packages(built_only, OPTIONAL_PARTS)


CLI_RUN = """
import atexit, json, sys
from loopwright.testing import FakeModelServer, Reply
server = FakeModelServer([Reply("**done**")]).__enter__()
atexit.register(lambda: print(json.dumps(sorted(
    m for m in sys.modules if m in ("rich.markdown", "pygments", "markdown_it",
                                    "loopwright.builtin.html_markdown", "html.parser")))))
sys.argv = ["loopwright", "run", "--model", "m", "--base-url", server.base_url,
            "--api-key", "k", "--tools", "web_fetch,read_file", "hi"]
from loopwright.cli import main
main()
"""


def test_loopwright_run_on_a_pipe_loads_no_markdown_renderer(tmp_path: Path) -> None:
    """Issue 31: rich's Markdown (markdown-it, pygments) and the HTML converter of `web_fetch`
    loaded before the first request; an answer on a pipe is printed raw and no page was
    fetched, so neither is needed."""
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", CLI_RUN], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path, env=env)
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "**done**", out.stderr
    assert json.loads(lines[-1]) == []


GC_WHILE_RUNNING = """
import gc, json, sys
from loopwright.testing import FakeModelServer, Reply
seen = []
def answer(request):
    seen.append([gc.isenabled(), gc.get_freeze_count() > 0])
    return Reply("done")
server = FakeModelServer(handler=answer).__enter__()
sys.argv = ["loopwright", COMMAND, "--model", "m", "--base-url", server.base_url,
            "--api-key", "k", *ARGS]
from loopwright.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps({"at_request": seen, "after": gc.isenabled()}))
"""


def gc_while_running(tmp_path: Path, command: str, args: list[str], stdin: str = "") -> object:
    code = GC_WHILE_RUNNING.replace("COMMAND", repr(command)).replace("ARGS", repr(args))
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path),
           "XDG_DATA_HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         input=stdin, timeout=120, cwd=tmp_path, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_run_and_chat_collect_garbage_again_before_the_agent_runs(tmp_path: Path) -> None:
    """Issue 31: the collector is paused while `run` and `chat` load their modules (a sixth of
    the CPU before the first request); it must be on, with start-up frozen, while the agent
    runs, and a resumed or failed start must not leave it off."""
    assert gc_while_running(tmp_path, "run", ["hi"]) == {
        "at_request": [[True, True]], "after": True}
    assert gc_while_running(tmp_path, "chat", [], stdin="hi\n") == {
        "at_request": [[True, True]], "after": True}
