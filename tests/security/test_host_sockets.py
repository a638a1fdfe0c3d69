"""The host's services on Unix sockets are out of a sandboxed command's reach. A socket at a path
is reached through the filesystem, not the network namespace, so `--unshare-net` alone left the
user's systemd and D-Bus session (either starts any command outside the sandbox), the ssh and gpg
agents and a Docker daemon (root) one `connect()` away; an abstract socket belongs to the network
namespace and was already out of reach (kept here: it was untested).

Real bubblewrap and real sockets; every host socket lives outside /tmp (the sandbox's private
/tmp would hide it anyway and prove nothing)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopwright import ToolContext
from loopwright.builtin import bash
from loopwright.safety.sandbox import SANDBOX_SERVICE, SandboxPolicy
from shared_helpers import require_component

pytestmark = pytest.mark.usefixtures("needs_bwrap")

CONNECT = ("python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); "
           "s.connect(sys.argv[1]); print(\"connected\")' {address}")


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user's runtime directory (as `/run/user/UID` is), outside /tmp."""
    path = Path(tempfile.mkdtemp(prefix="loopwright-runtime-", dir="/var/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def listening(address: str) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(address)
    server.listen()
    server.setblocking(False)
    return server


def was_reached(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
    except BlockingIOError:
        return False
    return True


async def run(workdir: Path, command: str, **policy: Any) -> str:
    ctx = ToolContext(workdir=workdir, services={SANDBOX_SERVICE: SandboxPolicy(**policy)})
    result = await bash.invoke(bash.validate({"command": command}), ctx)
    assert isinstance(result, str)
    return result


@pytest.mark.parametrize("network", [False, True])
async def test_the_session_bus_in_the_runtime_directory_is_out_of_reach(
        tmp_path: Path, runtime_dir: Path, network: bool) -> None:
    (runtime_dir / "systemd").mkdir()
    for address in (runtime_dir / "bus", runtime_dir / "systemd" / "private"):
        with listening(str(address)) as server:
            text = await run(tmp_path, CONNECT.format(address=address), network=network)
            assert "connected" not in text and "No such file" in text
            assert not was_reached(server)


async def test_an_abstract_socket_of_the_host_is_out_of_reach(tmp_path: Path) -> None:
    name = f"loopwright-test-{os.getpid()}"
    with listening(f"\0{name}") as server:
        # argv cannot carry the leading NUL: the command adds it
        text = await run(tmp_path, CONNECT.replace("sys.argv[1]", "chr(0) + sys.argv[1]")
                         .format(address=name))
        assert "connected" not in text and "Connection refused" in text
        assert not was_reached(server)


async def test_a_socket_the_command_makes_itself_still_works(tmp_path: Path,
                                                             runtime_dir: Path) -> None:
    # must not fire: a program's own socket in the workspace or in /tmp (a test server)
    serve_and_connect = (
        "python3 -c 'import socket, sys\n"
        "for address in sys.argv[1:]:\n"
        "    server = socket.socket(socket.AF_UNIX); server.bind(address); server.listen()\n"
        "    client = socket.socket(socket.AF_UNIX); client.connect(address)\n"
        "    print(\"connected\", address)' {}/own.sock /tmp/own.sock")
    text = await run(tmp_path, serve_and_connect.format(tmp_path))
    assert f"connected {tmp_path}/own.sock\nconnected /tmp/own.sock\n[exit code 0]" == text


POSTGRES_SOCKETS = Path("/run/postgresql")


@pytest.mark.parametrize("network", [False, True])
async def test_a_database_socket_is_out_of_reach_with_the_network_off(
        tmp_path: Path, network: bool) -> None:
    # PostgreSQL's peer authentication lets the user's own processes in by the socket; with
    # the network off the database is as out of reach as its TCP port (with it on, both are)
    require_component(POSTGRES_SOCKETS.is_dir() and os.access(POSTGRES_SOCKETS, os.W_OK),
                      "a writable /run/postgresql (PostgreSQL's socket directory)")
    address = POSTGRES_SOCKETS / f".s.PGSQL.{40000 + os.getpid() % 20000}"
    try:
        with listening(str(address)) as server:
            text = await run(tmp_path, CONNECT.format(address=address), network=network)
            assert ("connected" in text) is network, text
            assert was_reached(server) is network
    finally:
        address.unlink(missing_ok=True)


@contextlib.contextmanager
def host_directory(path: Path) -> Iterator[Path]:
    """`path`, a directory of the host's, made for the test where it is missing (removed after);
    an existing one is used as it is (the test's socket gets a name of its own in it)."""
    made = not path.exists()
    with contextlib.suppress(OSError):
        path.mkdir(exist_ok=True)
    if not (path.is_dir() and os.access(path, os.W_OK)):
        pytest.skip(f"{path} cannot be written here (the test puts a resolver's socket there)")
    try:
        yield path
    finally:
        if made:
            shutil.rmtree(path, ignore_errors=True)


RESOLVERS = {"/run/systemd/resolve": "io.systemd.Resolve", "/run/nscd": "socket"}


@pytest.mark.parametrize("network", [False, True])
@pytest.mark.parametrize("resolver", list(RESOLVERS))
async def test_the_hosts_name_resolver_is_out_of_reach_with_the_network_off(
        tmp_path: Path, network: bool, resolver: str) -> None:
    # systemd-resolved's varlink socket (or nscd's) looks up any name for whoever connects: a
    # command with the network off sent `<secret>.attacker.example` to that domain's DNS servers
    # through the host. With the network on the command resolves names itself anyway.
    real = Path(resolver) / RESOLVERS[resolver]
    if real.is_socket():  # the host's own resolver: connecting is all the test does
        text = await run(tmp_path, CONNECT.format(address=real), network=network)
        assert ("connected" in text) is network, text
        return
    with host_directory(Path(resolver)) as directory:
        address = directory / f"loopwright-test-{os.getpid()}"
        try:
            with listening(str(address)) as server:
                text = await run(tmp_path, CONNECT.format(address=address), network=network)
                assert ("connected" in text) is network, text
                assert was_reached(server) is network
        finally:
            address.unlink(missing_ok=True)


async def test_the_tmux_server_loopwright_runs_under_is_out_of_reach(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, canary: Path) -> None:
    # loopwright started in a tmux pane whose server socket is outside /tmp (TMUX_TMPDIR): the
    # command inherits $TMUX, and `tmux send-keys` typed into the user's own shell, which ran
    # the keys outside the sandbox at once
    require_component(shutil.which("tmux") is not None, "tmux: apt-get install tmux")
    folder = Path(tempfile.mkdtemp(prefix="loopwright-tmux-", dir="/var/tmp"))
    address = folder / "default"
    tmux = ["tmux", "-S", str(address)]
    subprocess.run([*tmux, "new-session", "-d", "-x", "80", "-y", "24", "sh"], check=True,
                   env={**os.environ, "TMUX": ""}, timeout=30)
    try:
        server_pid = subprocess.run([*tmux, "display", "-p", "#{pid}"], capture_output=True,
                                    text=True, check=True, timeout=30).stdout.strip()
        monkeypatch.setenv("TMUX", f"{address},{server_pid},0")
        text = await run(tmp_path, f"tmux send-keys -t 0 'touch {canary}' Enter; echo sent $?")
        await asyncio.sleep(0.5)  # a shell that got the keys has run them by now
        assert not canary.exists(), text
        assert "sent 1" in text, text
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, timeout=30)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("variable,prefix", [
    ("WEZTERM_UNIX_SOCKET", ""), ("KITTY_LISTEN_ON", "unix:"), ("NVIM", ""),
    ("VSCODE_IPC_HOOK_CLI", "")])
async def test_a_terminals_or_editors_remote_control_is_out_of_reach(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, prefix: str) -> None:
    # loopwright in a WezTerm or kitty window, a Neovim :terminal or VS Code's terminal: the
    # socket the variable names (here in the home directory, WezTerm's place) takes
    # `send-text` and types into the user's shell outside the sandbox
    folder = Path(tempfile.mkdtemp(prefix="loopwright-terminal-", dir="/var/tmp"))
    address = folder / "gui-sock-1"
    try:
        with listening(str(address)) as server:
            monkeypatch.setenv(variable, prefix + str(address))
            text = await run(tmp_path, CONNECT.format(address=address))
            assert "connected" not in text and not was_reached(server), text
            monkeypatch.delenv(variable)  # must not fire: no variable, no cover (a plain socket)
            text = await run(tmp_path, CONNECT.format(address=address))
            assert "connected" in text, text
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("network", [False, True])
async def test_gnu_screens_sessions_are_out_of_reach(tmp_path: Path, network: bool) -> None:
    # `screen -S NAME -X stuff 'CMD\n'` types into a session of the user's through its socket
    # in /run/screen (SCREENDIR), outside the sandbox, network or not
    with host_directory(Path("/run/screen")) as directory:
        address = directory / f"loopwright-test-{os.getpid()}"
        try:
            with listening(str(address)) as server:
                text = await run(tmp_path, CONNECT.format(address=address), network=network)
                assert "connected" not in text and not was_reached(server), text
        finally:
            address.unlink(missing_ok=True)


@pytest.mark.parametrize("socket_path", [".1password/agent.sock", ".bitwarden-ssh-agent.sock"])
async def test_a_password_managers_ssh_agent_is_out_of_reach(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, socket_path: str) -> None:
    home = Path(tempfile.mkdtemp(prefix="loopwright-home-", dir="/var/tmp"))
    try:
        monkeypatch.setenv("HOME", str(home))
        address = home / socket_path
        address.parent.mkdir(parents=True, exist_ok=True)
        with listening(str(address)) as server:
            text = await run(tmp_path, CONNECT.format(address=address))
            assert "connected" not in text and not was_reached(server), text
    finally:
        shutil.rmtree(home, ignore_errors=True)
