"""A workflow's journal lives where its session does: beside a JSONL transcript, or in the
database with a PostgreSQL store, so the process that carries on a killed run (on this machine or
another) replays the agents that had finished. Real CLI, a private PostgreSQL cluster, the
simulator."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from test_routines import env_for, project
from test_workflow_places import TRIAGE

from loopwright.testing import Simulator


def fire(root, env, store):
    return subprocess.run([sys.executable, "-m", "loopwright", "routine", "run", "triage", "--once", "--store", store],
                          cwd=root, env=env, capture_output=True, text=True, timeout=90)


def test_a_routine_items_workflow_on_postgresql_keeps_its_journal_in_the_store(tmp_path, pg_db):
    root = project(tmp_path, "triage", "source: {command: cat items.jsonl}\nworkflow: triage\n"
                                       "prompt: \"look at {id}\"\nsandbox: false\n")
    (root / ".loopwright" / "workflows").mkdir()
    (root / ".loopwright" / "workflows" / "triage.py").write_text(textwrap.dedent(TRIAGE))
    (root / "items.jsonl").write_text('{"id": "k1", "title": "slow one", "severity": 1}\n')
    before = sorted(os.listdir(root))
    slow = {"rules": [{"match": {"last_user_contains": "LOOK"}, "responses": [{"text": "looked"}]},
                      {"match": {"last_user_contains": "DECIDE"}, "responses": [{"text": "late", "delay": 60}]}]}
    with Simulator(slow) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "routine", "run", "triage", "--once", "--store",
                                 pg_db], cwd=root, env=env_for(tmp_path, sim), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while len(sim.message_requests) < 2:
                assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
                time.sleep(0.02)
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=10)
    assert sorted(os.listdir(root)) == before  # nothing written in the project: the journal is in the store
    rules = {"rules": [{"match": {"last_user_contains": "DECIDE"}, "responses": [{"text": "minor"}]}]}
    with Simulator(rules) as sim:
        again = fire(root, env_for(tmp_path, sim), pg_db)
        sent = [json.dumps(r.body["messages"][-1]["content"]) for r in sim.message_requests]
    assert again.returncode == 0, again.stderr
    assert len(sent) == 1 and "DECIDE triage look at k1 after looked" in sent[0]  # LOOK was not asked again
    listed = subprocess.run([sys.executable, "-m", "loopwright", "routine", "items", "triage", "--json", "--store",
                             pg_db], cwd=root, env=env_for(tmp_path), capture_output=True, text=True, timeout=60)
    (done,) = json.loads(listed.stdout)
    assert done["status"] == "done" and "k1 triaged: minor" in json.dumps(done), done
    assert sorted(os.listdir(root)) == before
    # the journal is in the store: the finished LOOK step is there
    steps = journal(pg_db, done["session_id"])[0]
    assert [r["type"] for r in steps] == ["workflow", "step", "step", "finished"]
    assert "LOOK k1" in steps[1]["shown"] and steps[3]["subtype"] == "success"


def journal(url, session_id):
    """The session's journal records in the store, by run (0: the current one, 1…: set aside)."""
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT set_aside, record FROM loopwright.workflow_journal WHERE session_id = %s "
                            "ORDER BY id", (session_id,)).fetchall()
    runs = {}
    for run, record in rows:
        runs.setdefault(run, []).append(json.loads(record))
    return runs


def test_a_routine_whose_items_run_a_workflow_is_not_sent_to_workers(tmp_path):
    """Workers run goal loops; a workflow item sent there would run as a bare prompt: refused, said why."""
    root = project(tmp_path, "triage", "source: {command: cat items.jsonl}\nworkflow: triage\nprompt: \"look at {id}\"\n")
    (root / "items.jsonl").write_text('{"id": "k1"}\n')
    out = subprocess.run([sys.executable, "-m", "loopwright", "routine", "run", "triage", "--once", "--queue", "q",
                          "--store", f"sqlite:///{tmp_path / 'store.db'}"], cwd=root, env=env_for(tmp_path),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2, out.stderr
    assert "--queue: the items of routine 'triage' run the workflow 'triage', and workers do not run workflows yet" \
        in out.stderr
    assert "Traceback" not in out.stderr


def test_workflow_run_on_postgresql_resumes_from_the_journal_in_the_store(tmp_path, pg_db):
    from test_memory import loopwright
    from test_workflows import world

    home, root = world(tmp_path, two='async def main(wf, args):\n    a = await wf.agent("FIRST")\n'
                                     '    return a + " " + await wf.agent("SECOND")\n',
                       one='async def main(wf, args):\n    return await wf.agent("ONLY")\n')
    cut = {"rules": [{"match": {"last_user_contains": "FIRST"}, "responses": [{"text": "a", "repeat": -1}]},
                     {"match": {"last_user_contains": "SECOND"}, "responses": [
                         {"fault": {"status": 400, "message": "no"}, "repeat": -1}]}]}
    with Simulator(cut) as sim:
        failed = loopwright(["workflow", "run", "two", "--store", pg_db, "--output-format", "json"], home, root, sim)
    session = json.loads(failed.stdout)["session_id"]
    rest = {"rules": [{"match": {"last_user_contains": "SECOND"}, "responses": [{"text": "b"}]},
                      {"match": {"last_user_contains": "ONLY"}, "responses": [{"text": "c"}]}]}
    with Simulator(rest) as sim:
        resumed = loopwright(["workflow", "run", "--resume", session, "--store", pg_db, "--output-format", "json"],
                             home, root, sim)
        asked = [json.dumps(r.body["messages"]) for r in sim.message_requests]
        assert json.loads(resumed.stdout)["result"] == "a b", resumed.stderr
        assert len(asked) == 1 and "SECOND" in asked[0]  # FIRST was replayed from the journal in the store
        again = loopwright(["workflow", "run", "one", "--resume", session, "--store", pg_db, "--output-format",
                            "json"], home, root, sim)
        assert json.loads(again.stdout)["result"] == "c", again.stderr
    assert sorted(os.listdir(root)) == [".loopwright"]

    runs = journal(pg_db, session)
    assert [r.get("name") for r in runs[0] if r["type"] == "workflow"] == ["one"]
    assert [r.get("name") for r in runs[1] if r["type"] == "workflow"] == ["two"]  # kept aside
