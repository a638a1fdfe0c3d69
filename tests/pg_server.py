"""A throwaway PostgreSQL server for the store tests: initdb into a temp dir, loopback on a free
port, run as a non-root user (PostgreSQL refuses root). The `postgres_server` fixture in
tests/conftest.py starts one per test session."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

PG_MISSING = ("PostgreSQL server binaries (initdb, pg_ctl), a non-root 'postgres' user and "
              "psycopg; on Debian/Ubuntu: apt-get install -y postgresql, and pip install "
              "'loopwright[postgres]'")


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_user(user: str | None, argv: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run it as `user` then."""
    return argv if user is None else ["runuser", "-u", user, "--", *argv]


@contextlib.contextmanager
def running_postgres() -> Iterator[str | None]:
    """Yields the DSN of a fresh server's `postgres` database, or None when this machine
    cannot run one (see PG_MISSING)."""
    bindir = _pg_bin()
    try:
        import psycopg  # noqa: F401
    except ImportError:
        bindir = None
    user = "postgres" if os.geteuid() == 0 else None
    if bindir is None or (user is not None and not (shutil.which("runuser")
                                                     and _user_exists(user))):
        yield None
        return
    root = Path(tempfile.mkdtemp(prefix="loopwright-pg-"))
    data, sockets = root / "data", root / "run"
    sockets.mkdir()
    if user is not None:
        shutil.chown(root, user)
        shutil.chown(sockets, user)
    port = _free_port()
    subprocess.run(_as_user(user, [str(bindir / "initdb"), "-D", str(data), "-U", "loopwright",
                                   "--auth=trust", "-E", "UTF8", "--no-sync"]),
                   check=True, capture_output=True)
    options = f"-p {port} -k {sockets} -h 127.0.0.1 -c fsync=off"
    subprocess.run(_as_user(user, [str(bindir / "pg_ctl"), "-D", str(data), "-o", options,
                                   "-l", str(root / "log"), "-w", "-t", "60", "start"]),
                   check=True, capture_output=True)
    try:
        yield f"postgresql://loopwright@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_user(user, [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate",
                                       "-w", "stop"]), capture_output=True)
        # by the suite's end the server holds a database per store test (~1 GB in ~30k files):
        # removing it took 20–70 s of the suite's last teardown, so it is left to a process the
        # suite does not wait for
        subprocess.Popen(["rm", "-rf", "--", str(root)], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)


def _user_exists(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def fresh_database(server_dsn: str) -> str:
    """A new empty database on the test server; its DSN."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server_dsn.rsplit("/", 1)[0] + f"/{name}"
