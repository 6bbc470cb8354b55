"""Sessions in PostgreSQL (issue 14 part 1): a loop run with `--store postgresql://…` is resumed
by another process in another folder, its export is the transcript the JSONL store writes for the
same scripted run, a second writer is refused as with JSONL, a routine item killed with `kill -9`
resumes from its session in the database without running a tool twice, and psycopg stays out of
every run that does not use it."""

import json
import os
import subprocess
import sys
import time

import pytest

from procs import kill_mid_tool

from loopwright.session import UNKNOWN_OUTCOME
from loopwright.stores import open_store
from loopwright.stores.jsonl import project_name, read_records
from loopwright.testing import Simulator

BASH = {"name": "Bash", "input": {"command": "echo one >> marks.txt"}}
FIRST = [{"tool_use": BASH}, {"text": "first done"}]
SECOND = [{"text": "second done"}]
# What differs between two runs of one script: ids made at random, clocks, and the folders.
VOLATILE = {"uuid", "parentUuid", "timestamp", "sessionId", "cwd", "promptId", "requestId", "durationMs",
            "duration_ms", "duration_api_ms", "gitBranch"}


def env_for(tmp_path, store=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "fakehome"))
    return env | ({"LOOPWRIGHT_STORE": store} if store else {})


def cli(args, env, cwd, sim=None):
    e = env | ({"ANTHROPIC_BASE_URL": sim.base_url} if sim else {})
    return subprocess.run([sys.executable, "-m", "loopwright", *args], env=e, cwd=cwd, capture_output=True,
                          text=True, timeout=90)


def folders(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(parents=True)
    b.mkdir()
    return a, b


def two_runs(env, a, b, store=None):
    """A tool turn in folder a (`--store`), then a resume by id from folder b (LOOPWRIGHT_STORE):
    the session id and what the second run's first request carried."""
    first_flags = ("--store", store) if store else ()
    with Simulator(FIRST) as sim:
        out = cli(["-p", "start here", "--output-format", "json", "--allowedTools", "Bash", *first_flags], env, a, sim)
    assert out.returncode == 0, out.stderr
    sid = json.loads(out.stdout)["session_id"]
    with Simulator(SECOND) as sim:
        out = cli(["-p", "and again", "-r", sid, "--output-format", "json"],
                  env | ({"LOOPWRIGHT_STORE": store} if store else {}), b, sim)
        sent = sim.message_requests[0].body["messages"]
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["session_id"] == sid
    return sid, sent


def shape(data):
    """The records of a transcript without what differs between two runs of one script (a
    resume's recorded command line and run spec name its session)."""
    import re

    def unnamed(value):
        return re.sub(r"^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$", "<session>", value)

    def same(record):
        kept = {k: v for k, v in record.items() if k not in VOLATILE}
        if isinstance(kept.get("argv"), list):
            kept["argv"] = [unnamed(a) for a in kept["argv"]]
        if isinstance(kept.get("spec"), dict) and isinstance(kept["spec"].get("resume"), str):
            kept["spec"] = dict(kept["spec"], resume=unnamed(kept["spec"]["resume"]))
        return kept

    return [same(json.loads(line)) for line in data.decode().splitlines()]


def test_a_loop_in_postgres_resumes_elsewhere_and_exports_what_the_jsonl_store_writes(pg_db, tmp_path):
    a, b = folders(tmp_path / "pg")  # both runs' folders are as long: the requests are the same size
    env = env_for(tmp_path / "pg")
    sid, sent = two_runs(env, a, b, pg_db)
    assert not (tmp_path / "pg" / "home" / "projects").exists()  # nothing went to JSONL files
    assert sent[0]["content"][0]["text"] == "start here" and "one" not in json.dumps(sent[0])
    assert any(block.get("type") == "tool_result" for m in sent for block in m["content"] if isinstance(block, dict))
    assert (a / "marks.txt").read_text() == "one\n"
    exported = cli(["session", "export", sid, "--store", pg_db], env, b)
    assert exported.returncode == 0, exported.stderr
    data = exported.stdout.encode()

    jsonl_env = env_for(tmp_path / "js")
    a2, b2 = folders(tmp_path / "js")
    sid2, _ = two_runs(jsonl_env, a2, b2)
    written = (tmp_path / "js" / "home" / "projects" / project_name(a2) / f"{sid2}.jsonl").read_bytes()
    assert shape(data) == shape(written) and len(shape(data)) >= 6
    assert data == b"".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
                            for r in read_records_of(data))  # compact lines, as the JSONL store writes them


def read_records_of(data):
    return [json.loads(line) for line in data.decode().splitlines()]


def test_a_second_writer_is_refused_as_with_jsonl(pg_db, tmp_path):
    a, b = folders(tmp_path)
    env = env_for(tmp_path, pg_db)
    with Simulator([{"text": "ok"}]) as sim:
        sid = json.loads(cli(["-p", "hi", "--output-format", "json"], env, a, sim).stdout)["session_id"]
    holder = open_store(pg_db, a).sessions.open(sid)  # another process's writer, as far as the run can tell
    try:
        with Simulator([{"text": "never"}]) as sim:
            out = cli(["-p", "again", "-r", sid], env, b, sim)
            assert sim.message_requests == []
        assert out.returncode != 0
        assert f"cannot open session {sid}: " in out.stderr and "is being written by another loopwright process" in out.stderr
        assert "password" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    finally:
        holder.close()
    with Simulator([{"text": "now mine"}]) as sim:
        out = cli(["-p", "again", "-r", sid, "--output-format", "json"], env, b, sim)
    assert json.loads(out.stdout)["result"] == "now mine"


def test_an_export_read_back_by_the_jsonl_store_resumes_there(pg_db, tmp_path):
    """Tools that read Claude Code transcripts read the export: here, the JSONL store itself."""
    a, b = folders(tmp_path)
    env = env_for(tmp_path, pg_db)
    with Simulator(FIRST) as sim:
        out = cli(["-p", "start here", "--output-format", "json", "--allowedTools", "Bash"], env, a, sim)
    sid = json.loads(out.stdout)["session_id"]
    target = tmp_path / "home" / "projects" / project_name(a) / f"{sid}.jsonl"
    target.parent.mkdir(parents=True)
    assert cli(["session", "export", sid, "-o", str(target)], env, b).returncode == 0
    records, warnings = read_records(target)
    assert warnings == [] and "start here" in json.dumps(records[0]["message"])
    with Simulator(SECOND) as sim:
        out = cli(["-p", "go on", "-r", sid, "--output-format", "json", "--store", "sqlite:"], env, a, sim)
        sent = json.dumps(sim.message_requests[0].body["messages"])
    assert json.loads(out.stdout)["result"] == "second done" and "start here" in sent and "first done" in sent


def test_schema_is_made_once_versioned_and_a_newer_one_is_refused(pg_db, tmp_path):
    import psycopg

    from loopwright.core.errors import LoopwrightError
    from loopwright.stores import postgres

    stores = open_store(pg_db, tmp_path)
    assert stores.sessions.latest() is None  # first use: the schema is made
    with psycopg.connect(pg_db, autocommit=True) as conn:
        assert postgres.migrate(conn, "here") == len(postgres.MIGRATIONS)  # again: nothing to do
        conn.execute("UPDATE loopwright.meta SET value = '999' WHERE key = 'schema_version'")
    postgres._READY.clear()
    with pytest.raises(LoopwrightError, match="schema version 999, newer than this loopwright"):
        open_store(pg_db, tmp_path).schedules()


def test_an_unreachable_store_is_one_clear_error_without_its_password(tmp_path):
    env = env_for(tmp_path, "postgresql://me:hunter2@127.0.0.1:1/none")
    out = cli(["-p", "hi"], env, tmp_path)
    assert out.returncode != 0 and "cannot reach the store postgresql://me:***@127.0.0.1:1/none" in out.stderr
    assert "hunter2" not in out.stderr and "Traceback" not in out.stderr


def test_psycopg_loads_only_for_a_postgresql_store(tmp_path):
    env = env_for(tmp_path, f"sqlite://{tmp_path}/s.db")
    with Simulator([{"text": "hi"}]) as sim:
        out = subprocess.run([sys.executable, "-X", "importtime", "-m", "loopwright", "-p", "hi"], cwd=tmp_path,
                             env=env | {"ANTHROPIC_BASE_URL": sim.base_url}, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "hi", out.stderr[-2000:]
    assert "psycopg" not in imported(out.stderr) and "loopwright.stores.jsonl" in imported(out.stderr)
    version = subprocess.run([sys.executable, "-X", "importtime", "-m", "loopwright", "--version"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert not {"psycopg", "loopwright.stores"} & imported(version.stderr)


def imported(importtime):
    """The modules `python -X importtime` says were loaded."""
    return {line.split("|")[-1].strip() for line in importtime.splitlines() if line.startswith("import time:")}


ROUTINE = """\
source:
  command: cat items.jsonl
prompt: "Handle report {id}: {title}"
allowed_tools: [Bash]
sandbox: false
"""


def bash(command):
    return {"name": "Bash", "input": {"command": command}}


def test_a_routine_item_killed_mid_run_resumes_from_the_database_and_runs_no_tool_twice(pg_db, tmp_path):
    root = tmp_path / "project"
    (root / ".loopwright" / "routines").mkdir(parents=True)
    (root / ".loopwright" / "routines" / "long.yaml").write_text(ROUTINE)
    (root / "items.jsonl").write_text('{"id": "k1", "title": "slow one"}\n')
    env = env_for(tmp_path)
    first = [{"tool_use": bash("echo a >> marks.txt")},
             {"tool_use": bash("echo b >> marks.txt; echo $$ > tool.pid; sleep 30")}]
    with Simulator(first) as sim:
        kill_mid_tool(["routine", "run", "long", "--once", "--store", pg_db], root,
                      env | {"ANTHROPIC_BASE_URL": sim.base_url}, root / "tool.pid")
    assert not (tmp_path / "home" / "projects").exists() and not (tmp_path / "home" / "schedules.db").exists()

    with Simulator([{"text": "checked: both steps ran; finished"}]) as sim:
        second = cli(["routine", "run", "long", "--once", "--store", pg_db], env, root, sim)
        sent = json.dumps(sim.message_requests[0].body["messages"])
    assert second.returncode == 0, second.stderr
    assert "k1: its process died mid-run; resuming its session" in second.stderr
    assert (root / "marks.txt").read_text() == "a\nb\n"  # every Bash call ran exactly once
    assert json.dumps(UNKNOWN_OUTCOME.format(name="Bash"))[1:-1] in sent and "Handle report k1" in sent
    (item,) = json.loads(cli(["routine", "items", "long", "--json", "--store", pg_db], env, root).stdout)
    assert item["status"] == "done" and item["tries"] == 1


def test_a_scheduler_on_postgres_passes_its_store_to_every_fire(pg_db, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    env = env_for(tmp_path)
    with Simulator([{"tool_use": BASH}, {"text": "fired"}]) as sim:
        added = cli(["schedule", "add", "keep going", "--every", "1h", "--now", "--store", pg_db, "--",
                     "--allowedTools", "Bash"], env, project)
        assert added.returncode == 0, added.stderr
        served = cli(["scheduler", "--once", "--store", pg_db], env, tmp_path, sim)
    assert served.returncode == 0, served.stderr
    assert "active schedule(s) in postgresql://loopwright@127.0.0.1:" in served.stderr
    (run,) = json.loads(cli(["schedule", "runs", "--json", "--store", pg_db], env, tmp_path).stdout)
    assert run["status"] == "success", run
    exported = cli(["session", "export", run["session_id"], "--store", pg_db], env, tmp_path)
    assert '"text":"fired"' in exported.stdout and (project / "marks.txt").read_text() == "one\n"
    assert not (tmp_path / "home" / "projects").exists() and not (tmp_path / "home" / "schedules.db").exists()


def test_a_subagents_sidechain_is_kept_beside_its_session_and_exported_with_agent(pg_db, tmp_path):
    import psycopg

    a, _ = folders(tmp_path)
    env = env_for(tmp_path, pg_db)
    script = {"rules": [
        {"match": {"last_user_contains": "SUB-TASK"}, "responses": [{"text": "SUB found nothing"}]},
        {"match": {"last_user_contains": "SUB found nothing"}, "responses": [{"text": "all clear"}]},
        {"responses": [{"tool_use": {"name": "Agent", "input": {"description": "look", "prompt": "SUB-TASK look"}}}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "check it", "--output-format", "json"], env, a, sim)
    sid = json.loads(out.stdout)["session_id"]
    assert json.loads(out.stdout)["result"] == "all clear", out.stderr
    with psycopg.connect(pg_db) as conn:
        (chain,), = conn.execute("SELECT DISTINCT chain FROM loopwright.records WHERE chain <> ''").fetchall()
    side = cli(["session", "export", sid, "--agent", chain], env, a)
    rows = [json.loads(line) for line in side.stdout.splitlines()]
    assert rows and all(r["isSidechain"] and r["agentId"] == chain and r["sessionId"] == sid for r in rows)
    assert "SUB-TASK look" in side.stdout and "SUB found nothing" in side.stdout
    main = cli(["session", "export", sid], env, a).stdout
    assert "SUB found nothing" in main and '"isSidechain":true' not in main
    none = cli(["session", "export", sid, "--agent", "nobody"], env, a)
    assert none.returncode != 0 and f"no sidechain of agent nobody in session {sid}" in none.stderr


def test_continue_picks_this_folders_latest_session_in_the_database(pg_db, tmp_path):
    a, b = folders(tmp_path)
    env = env_for(tmp_path, pg_db)
    ids = {}
    for folder, prompt in ((a, "in a first"), (b, "in b"), (a, "in a second")):
        with Simulator([{"text": "ok"}]) as sim:
            ids[prompt] = json.loads(cli(["-p", prompt, "--output-format", "json"], env, folder, sim).stdout)[
                "session_id"]
    with Simulator([{"text": "continued"}]) as sim:
        out = cli(["-p", "more", "-c", "--output-format", "json"], env, a, sim)
        sent = json.dumps(sim.message_requests[0].body["messages"])
    assert json.loads(out.stdout)["session_id"] == ids["in a second"] and "in a second" in sent
    listed = json.loads(cli(["sessions", "--json"], env, a).stdout)
    assert [r["id"] for r in listed] == [ids["in a second"], ids["in a first"]]
    assert listed[1]["first_prompt"] == "in a first" and listed[1]["outcome"] == "completed" and listed[1]["turns"] == 1
    assert listed[1]["folder"] == str(a)
    holder = open_store(pg_db, a).sessions.open(ids["in b"])
    try:
        everywhere = json.loads(cli(["sessions", "--all", "--json"], env, a).stdout)
    finally:
        holder.close()
    assert len(everywhere) == 3 and everywhere[0]["id"] == ids["in a second"]  # `-c` wrote to it last
    assert {r["id"]: r["outcome"] for r in everywhere} == {ids["in a second"]: "completed", ids["in b"]: "running",
                                                            ids["in a first"]: "completed"}


def test_the_same_records_export_as_the_same_bytes_from_both_stores(pg_db, tmp_path):
    records = [{"type": "user", "message": {"role": "user", "content": "naïve ☃ \ud800 \"q\""}, "n": 1},
               {"type": "assistant", "message": {"content": [{"type": "text", "text": "x" * 70000}]}, "f": 0.1},
               {"type": "system", "nested": {"a": [1, {"b": None}]}, "t": True}]
    local = open_store("", tmp_path, {"LOOPWRIGHT_HOME": str(tmp_path / "home")}).sessions
    database = open_store(pg_db, tmp_path).sessions
    for store in (local, database):
        log = store.create("same-id")
        for i, record in enumerate(records):
            log.append(record, sync=i == 1)
        side = log.sidechain("a1")
        side.append(records[0])
        side.close()
        log.close()
    assert database.export("same-id") == local.export("same-id") == (tmp_path / "home" / "projects" / project_name(
        tmp_path) / "same-id.jsonl").read_bytes()
    assert database.export("same-id", "a1") == local.export("same-id", "a1")
    assert database.load("same-id") == local.load("same-id") and database.load("other") is None


def test_serve_shows_and_pauses_the_schedules_of_a_postgresql_store(pg_db, tmp_path):
    from starlette.testclient import TestClient

    from loopwright.core.storeports import Schedule
    from loopwright.web.app import Config, build

    schedules = open_store(pg_db, tmp_path).schedules()
    schedules.add(Schedule("nightly-pg", str(tmp_path), "check the build", 86400, 1.0, 2_000_000_000.0))
    app = build(Config(tmp_path, None, "sekrit", local=False, port=80, store=pg_db))
    with TestClient(app, base_url="http://box.example") as client:
        page = client.get("/schedules", headers={"X-Loopwright-Token": "sekrit"})
        assert page.status_code == 200 and "nightly-pg" in page.text
        paused = client.post("/schedules/nightly-pg/pause", headers={"X-Loopwright-Token": "sekrit",
                                                                       "Origin": "http://box.example"},
                             follow_redirects=False)
    assert paused.status_code == 303 and schedules.get("nightly-pg").paused
    schedules.close()


def test_the_store_url_is_kept_from_the_tools(pg_db, tmp_path):
    a, _ = folders(tmp_path)
    env = env_for(tmp_path, pg_db.replace("loopwright@", "loopwright:pw-in-url@"))
    script = [{"tool_use": {"name": "Bash", "input": {"command": "echo store=[$LOOPWRIGHT_STORE]"}}}, {"text": "ok"}]
    with Simulator(script) as sim:
        out = cli(["-p", "look", "--allowedTools", "Bash", "--output-format", "json"], env, a, sim)
        sent = json.dumps(sim.message_requests[-1].body["messages"])
    assert out.returncode == 0, out.stderr
    assert "store=[]" in sent and "pw-in-url" not in sent


def test_serve_lists_and_shows_the_sessions_of_a_postgresql_store_and_follows_new_ones(pg_db, tmp_path):
    from starlette.testclient import TestClient

    from loopwright.web.app import Config, build

    a, _ = folders(tmp_path)
    env = env_for(tmp_path, pg_db)
    with Simulator(FIRST) as sim:
        out = cli(["-p", "start here", "--output-format", "json", "--allowedTools", "Bash"], env, a, sim)
    assert out.returncode == 0, out.stderr
    first = json.loads(out.stdout)["session_id"]
    app = build(Config(tmp_path / "home", str(a), "sekrit", local=False, port=80, store=pg_db))
    headers = {"X-Loopwright-Token": "sekrit"}
    with TestClient(app, base_url="http://box.example") as client:
        listed = client.get("/", headers=headers)
        assert listed.status_code == 200 and first in listed.text and "start here" in listed.text
        page = client.get(f"/s/{first}", headers=headers)
        assert page.status_code == 200 and "echo one &gt;&gt; marks.txt" in page.text and "first done" in page.text
        with Simulator([{"text": "later done"}]) as sim:  # a session written while the view runs
            out = cli(["-p", "a later one", "--output-format", "json"], env, a, sim)
        later = json.loads(out.stdout)["session_id"]
        deadline = time.monotonic() + 30
        while later not in client.get("/", headers=headers).text and time.monotonic() < deadline:
            time.sleep(0.3)
        assert later in client.get("/", headers=headers).text
        # a sync may have mirrored the session's first records while it ran: the rest follow a
        # sync later, so its page is read until it shows the end
        page = lambda: client.get(f"/s/{later}", headers=headers).text  # noqa: E731
        while "later done" not in page() and time.monotonic() < deadline + 10:
            time.sleep(0.3)
        assert "later done" in page()
    assert not (tmp_path / "home" / "projects").exists()  # nothing was read from (or written as) home files
