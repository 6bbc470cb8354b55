"""A private PostgreSQL cluster on 127.0.0.1 for the tests that need a shared store.

`.ci/run` installs Debian's `postgresql` package; this module finds its binaries, creates a
throw-away cluster in a temporary directory, starts it on a free loopback port and stops it by
the postmaster's process id. A test that needs it takes the `pg_url` fixture (one cluster per
test session) or `pg_db` (a fresh database per test). When the binaries are missing or the
cluster cannot start, those tests are skipped with the reason.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def _bindir() -> Path | None:
    """The directory that holds initdb and postgres: Debian's versioned one, else PATH."""
    for found in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(found) / "initdb").exists() and (Path(found) / "postgres").exists():
            return Path(found)
    initdb = shutil.which("initdb")
    if initdb and shutil.which("postgres"):
        return Path(initdb).resolve().parent
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _demote() -> tuple[int, int] | None:
    """PostgreSQL refuses to run as root: as root, run it as the `postgres` (else `nobody`) user."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    return None


class Cluster:
    """One running cluster: `url(db)` names a database in it; `stop()` ends it by its pid."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.sockets = root / "sock"
        self.port = _free_port()
        self.user = "loopwright"
        self.pid: int | None = None

    def start(self, bindir: Path) -> None:
        ids = _demote()
        self.sockets.mkdir(parents=True)
        if ids:
            os.chown(self.root, *ids)
            os.chown(self.sockets, *ids)

        def as_owner() -> None:  # (and run from the cluster's own folder: the caller's may be closed to it)
            if ids:
                os.setgid(ids[1])
                os.setuid(ids[0])

        subprocess.run(
            [str(bindir / "initdb"), "-D", str(self.data), "-U", self.user, "--auth=trust",
             "--encoding=UTF8", "--no-sync"],
            check=True, capture_output=True, preexec_fn=as_owner, timeout=120, cwd=self.root,
        )
        self._as_owner, self._bindir = as_owner, bindir
        self._pg_ctl("start")

    def _pg_ctl(self, action: str) -> None:
        log = self.root / "server.log"
        subprocess.run(
            [str(self._bindir / "pg_ctl"), "-D", str(self.data), "-l", str(log), "-w", "-t", "60",
             "-o", f"-h 127.0.0.1 -p {self.port} -k {self.sockets} -c fsync=off "
                   "-c max_connections=300 -c shared_buffers=64MB",
             *(["-m", "fast"] if action in ("restart", "stop") else []), action],
            check=True, capture_output=True, preexec_fn=self._as_owner, timeout=90, cwd=self.root,
        )
        self.pid = int((self.data / "postmaster.pid").read_text().split()[0]) if action != "stop" else None

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every connection is cut, and the server comes back on its port."""
        self._pg_ctl("restart")

    def down(self) -> None:
        """`pg_ctl stop -m fast`: every connection is cut, and nothing answers on the port until `up`."""
        self._pg_ctl("stop")

    def up(self) -> None:
        self._pg_ctl("start")

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{db}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        try:
            os.kill(pid, signal.SIGQUIT)  # immediate shutdown
        except ProcessLookupError:
            return
        for _ in range(200):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)


def start_cluster() -> tuple[Cluster | None, str]:
    """A running cluster, or None and the reason it could not start."""
    bindir = _bindir()
    if bindir is None:
        return None, "PostgreSQL is not installed (initdb/postgres not found; .ci/run installs it)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg is not installed (pip install -e '.[test]')"
    root = Path(tempfile.mkdtemp(prefix="lw-pg-"))
    cluster = Cluster(root)
    try:
        cluster.start(bindir)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
        return None, f"PostgreSQL could not start: {exc} {detail.decode(errors='replace')[-400:]}"
    return cluster, ""


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    cluster, reason = start_cluster()
    if cluster is None:
        pytest.skip(reason)
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)


@pytest.fixture
def pg_db(pg_cluster: Cluster) -> str:
    """The URL of a fresh, empty database in the session's cluster."""
    return pg_cluster.create_database("t_" + uuid.uuid4().hex[:12])
