"""The JSONL mirror of a PostgreSQL store (`loopwright serve --store postgresql://…`), synced as
the server syncs it: a session written after the first sync and one appended to (by real
`loopwright -p` runs) reach the mirror as the bytes `session export` gives; a record that commits
after a sync read past its id (a slow writer) still arrives; and the full comparison finds a
record the quick sync had passed over."""

import json
import time

from test_store_postgres import FIRST, cli, env_for, folders

from loopwright.stores import open_store
from loopwright.stores.jsonl import project_name
from loopwright.stores.pgmirror import SETTLE_S, Mirror
from loopwright.testing import Simulator


def run(env, cwd, *args, script=({"text": "done"},)):
    with Simulator(list(script)) as sim:
        out = cli(["-p", *args, "--output-format", "json", "--allowedTools", "Bash"], env, cwd, sim)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["session_id"]


def mirrored(mirror, cwd, sid):
    path = mirror.root / "projects" / project_name(cwd) / f"{sid}.jsonl"
    return path.read_bytes() if path.exists() else None


def test_a_session_written_after_the_first_sync_and_one_appended_to_are_mirrored(pg_db, tmp_path):
    a, _ = folders(tmp_path)
    env = env_for(tmp_path, pg_db)
    first = run(env, a, "start here", script=FIRST)
    stores = open_store(pg_db, a)
    mirror = Mirror(stores, tmp_path / "mirror")
    assert mirror.sync() > 0
    assert mirrored(mirror, a, first) == stores.sessions.export(first)
    assert mirror.sync() == 0  # nothing new: nothing appended
    later = run(env, a, "a later one")
    run(env, a, "and again", "-r", first)  # the first session appended to
    assert mirror.sync() > 0
    assert mirrored(mirror, a, later) == stores.sessions.export(later)
    assert mirrored(mirror, a, first) == stores.sessions.export(first)
    assert b"and again" in mirrored(mirror, a, first)
    assert mirror.sync() == 0 and mirror.reconcile() == 0  # in step: the full comparison finds nothing


def test_a_record_committed_after_a_sync_read_past_its_id_still_arrives(pg_db, tmp_path):
    stores = open_store(pg_db, tmp_path)
    slow, quick = stores.sessions.create("slow-writer"), stores.sessions.create("quick-writer")
    slow.append({"type": "user", "n": 1})
    mirror = Mirror(stores, tmp_path / "mirror")
    mirror.sync()
    pending = stores.connect()  # a writer whose insert has taken its id but not yet committed
    pending.execute("BEGIN")
    pending.execute("INSERT INTO loopwright.records (session_id, chain, line) VALUES ('slow-writer', '', %s)",
                    (b'{"type":"user","n":2}',))
    quick.append({"type": "user", "n": 1})  # a higher id, committed first
    assert mirror.sync() == 1  # the quick writer's: the slow one's is not visible yet
    for _ in range(2):  # syncs more than SETTLE_S apart while the slow writer's transaction runs
        time.sleep(SETTLE_S + 0.1)
        assert mirror.sync() == 0
    pending.execute("COMMIT")
    pending.close()
    assert mirror.sync() == 1
    assert mirrored(mirror, tmp_path, "slow-writer") == stores.sessions.export("slow-writer")
    assert mirrored(mirror, tmp_path, "quick-writer") == stores.sessions.export("quick-writer")
    slow.close()
    quick.close()


def test_the_full_comparison_finds_a_record_the_sync_passed_over(pg_db, tmp_path):
    """A subagent's record written before its session has a row is passed over by `sync` (no
    project to put it under); once the low-water mark has moved past it, only `reconcile` finds it."""
    stores = open_store(pg_db, tmp_path)
    early = stores.connect()
    early.execute("INSERT INTO loopwright.records (session_id, chain, line) VALUES ('late-row', 'a1', %s)",
                  (b'{"type":"user","n":1}',))
    early.close()
    mirror = Mirror(stores, tmp_path / "mirror")
    assert mirror.sync() == 0
    for _ in range(2):
        time.sleep(SETTLE_S + 0.1)
        mirror.sync()
    assert mirror.low > 0  # past the subagent's record
    log = stores.sessions.create("late-row")
    log.append({"type": "user", "n": 1})
    assert mirror.sync() == 1  # the session's own record only
    side = mirror.path(project_name(tmp_path), "late-row", "a1")
    assert not side.exists()
    assert mirror.reconcile() == 1
    assert side.read_bytes() == stores.sessions.export("late-row", "a1")
    log.close()
