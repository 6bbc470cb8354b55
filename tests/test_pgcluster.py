"""The private PostgreSQL cluster the shared-store tests run on: it starts, serves, and stops."""

import os

import pytest

from pgcluster import start_cluster


def test_a_private_cluster_serves_on_loopback_and_stops_by_its_pid() -> None:
    import psycopg

    cluster, reason = start_cluster()
    if cluster is None:
        pytest.skip(reason)
    try:
        url = cluster.create_database("probe")
        assert "127.0.0.1" in url
        with psycopg.connect(url) as conn:
            conn.execute("CREATE TABLE t (x int)")
            conn.execute("INSERT INTO t VALUES (41)")
            assert conn.execute("SELECT x + 1 FROM t").fetchone() == (42,)
        pid = cluster.pid
        assert pid is not None
    finally:
        cluster.stop()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
