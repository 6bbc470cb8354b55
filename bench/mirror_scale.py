"""The PostgreSQL mirror of `loopwright serve --store postgresql://…` at real sizes: a private
cluster (tests/pgcluster.py) filled with 10,000 sessions of a few records each (and a subagent
transcript in one session of 20), then `stores.pgmirror.Mirror` timed as the server runs it: the
first sync (writes every file), an idle sync (nothing changed: what the server pays every
second), a sync after 10 sessions were appended to and 10 new ones written, and the full
comparison the server runs once a minute.

Run: .venv/bin/python bench/mirror_scale.py [--sessions 10000] [--records 5] [--runs 20]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from pgcluster import start_cluster  # noqa: E402

from loopwright.stores import open_store  # noqa: E402
from loopwright.stores.pgmirror import Mirror  # noqa: E402
from loopwright.web.mirrored import SYNC_EVERY_S  # noqa: E402

PROJECTS = 20


def line(kind: str, sid: str, cwd: str, n: int, **fields) -> bytes:
    record = {"type": kind, "uuid": str(uuid.uuid4()), "parentUuid": None, "sessionId": sid,
              "timestamp": f"2026-11-{1 + n % 28:02d}T10:{n % 60:02d}:00.000Z", "cwd": cwd, "version": 1, **fields}
    return json.dumps(record, separators=(",", ":")).encode()


def records(sid: str, cwd: str, n: int, count: int) -> list[bytes]:
    out = [line("user", sid, cwd, n, message={"role": "user", "content": f"task {n}: fix the tests"})]
    for i in range(count - 2):
        out.append(line("assistant", sid, cwd, n, message={
            "role": "assistant", "model": "claude-sonnet-5", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": f"Step {i}: reading the file and fixing it."}],
            "usage": {"input_tokens": 1200 + i, "output_tokens": 80}}))
    out.append(line("system", sid, cwd, n, subtype="run_result", resultSubtype="success", terminalReason="completed",
                    numTurns=count - 2, durationMs=1000, totalCostUsd=0.004))
    return out


def fill(stores, sessions: int, per_session: int) -> None:
    """The rows the store's writers make, put in with COPY (a writer per session would take minutes)."""
    from loopwright.stores.jsonl import project_name

    db = stores.db()
    with db.cursor() as cur:
        with cur.copy("COPY loopwright.sessions (id, project, cwd, created) FROM STDIN") as copy:
            for n in range(sessions):
                cwd = f"/work/project{n % PROJECTS}"
                copy.write_row((str(uuid.UUID(int=n + 1)), project_name(cwd), cwd, 1.0 + n))
        with cur.copy("COPY loopwright.records (session_id, chain, line) FROM STDIN") as copy:
            for n in range(sessions):
                sid, cwd = str(uuid.UUID(int=n + 1)), f"/work/project{n % PROJECTS}"
                for record in records(sid, cwd, n, per_session):
                    copy.write_row((sid, "", record))
                if n % 500 == 0:  # now and then a subagent's sidechain
                    for record in records(sid, cwd, n, 3):
                        copy.write_row((sid, f"a{n}", record))
    db.execute("ANALYZE loopwright.records")
    db.execute("ANALYZE loopwright.sessions")


def change(stores, sessions: int, changed: int) -> None:
    """`changed` sessions appended to and as many new ones written, each through the store's own writer."""
    for k in range(changed):
        n = (k * 997) % sessions
        log = stores.sessions.open(str(uuid.UUID(int=n + 1)))
        log.append({"type": "user", "uuid": str(uuid.uuid4()), "message": {"role": "user", "content": "and again"}})
        log.close()
        fresh = stores.sessions.create(str(uuid.uuid4()))
        fresh.append({"type": "user", "uuid": str(uuid.uuid4()), "message": {"role": "user", "content": "new"}})
        fresh.close()


def timed(fn) -> tuple[float, int]:
    start = time.perf_counter()
    got = fn()
    return time.perf_counter() - start, got


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sessions", type=int, default=10_000)
    p.add_argument("--records", type=int, default=5, help="records per session")
    p.add_argument("--runs", type=int, default=20, help="idle syncs timed")
    opts = p.parse_args()
    cluster, reason = start_cluster()
    if cluster is None:
        sys.exit(f"mirror_scale: {reason}")
    tmp = Path(tempfile.mkdtemp(prefix="lw-mirror-"))
    try:
        stores = open_store(cluster.create_database("bench"), tmp)
        t0 = time.perf_counter()
        fill(stores, opts.sessions, opts.records)
        total = stores.db().execute("SELECT count(*) FROM loopwright.records").fetchone()[0]
        print(f"filled {opts.sessions:,} sessions, {total:,} records in {time.perf_counter() - t0:.1f}s")
        report(stores, tmp / "mirror", opts)
    finally:
        cluster.stop()
        shutil.rmtree(cluster.root, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def report(stores, root: Path, opts) -> None:
    mirror = Mirror(stores, root)
    took, added = timed(mirror.sync)
    print(f"first sync (every session written as a file): {took:.2f}s, {added:,} records")
    idle = []
    for _ in range(opts.runs):
        time.sleep(SYNC_EVERY_S)  # as the server does between two syncs
        idle.append(timed(mirror.sync)[0])
    print(f"idle sync (nothing changed; one a second as the server runs it): median "
          f"{statistics.median(idle) * 1000:.2f} ms, max {max(idle) * 1000:.2f} ms ({opts.runs} runs)")
    after = []
    for _ in range(5):
        change(stores, opts.sessions, 10)
        time.sleep(SYNC_EVERY_S)
        took, added = timed(mirror.sync)
        assert added == 20, added
        after.append(took)
    print(f"sync after 10 sessions appended to and 10 new ones: median {statistics.median(after) * 1000:.2f} ms, "
          f"max {max(after) * 1000:.2f} ms (5 runs)")
    if hasattr(mirror, "reconcile"):
        took, added = timed(mirror.reconcile)
        assert added == 0, added
        print(f"full comparison (reconcile, once a minute): {took * 1000:.1f} ms")
    files = sum(1 for _ in root.glob("projects/*/*.jsonl"))
    print(f"mirror: {files:,} session files")
    print(f"(PostgreSQL {stores.db().execute('SHOW server_version').fetchone()[0]})")


if __name__ == "__main__":
    main()
