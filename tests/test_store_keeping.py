"""What a session keeps besides its transcript, on both stores (`any_store`): file checkpoints with
`loopwright rewind` putting back the files and the conversation, and a workflow's journal, so a
workflow killed mid-run replays its finished agents from the store without asking the model
again. With PostgreSQL, nothing of it goes to files under the home. The real CLI and the
simulator; a database made before these tables existed is brought up to date."""

import json
import os
import signal
import subprocess
import sys
import textwrap

from storekinds import any_store  # noqa: F401  (a fixture)
from test_crash import kill9, wait_for
from test_workflows import rules

from loopwright.session.checkpoints import Checkpoints
from loopwright.stores import open_store
from loopwright.testing import Simulator

ON = {"CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING": "true"}


def env_for(tmp_path, store):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "CLAUDE_CODE_"))}
    return env | {"HOME": str(tmp_path / "fakehome"), "LOOPWRIGHT_HOME": str(tmp_path / "home"),
                  "ANTHROPIC_API_KEY": "sk-test", "LOOPWRIGHT_STORE": store}


def cli(args, env, cwd, sim=None):
    e = env | ({"ANTHROPIC_BASE_URL": sim.base_url} if sim else {})
    return subprocess.run([sys.executable, "-m", "loopwright", *args], env=e, cwd=cwd, capture_output=True,
                          text=True, timeout=90)


def stores(url, cwd, tmp_path):
    """The stores the CLI runs of a test use."""
    return open_store(url, cwd, {"LOOPWRIGHT_HOME": str(tmp_path / "home")})


def in_home(tmp_path):
    """What went to session files under the home (nothing, with a database store)."""
    return sorted(p.name for p in (tmp_path / "home" / "projects").rglob("*")) if (
        tmp_path / "home" / "projects").exists() else []


# ------------------------------------------------------------------------------ checkpoints and rewind

def write(path, content):
    return {"tool_use": {"name": "Write", "input": {"file_path": path, "content": content}}}


def edit(path, old, new):
    return {"tool_use": {"name": "Edit", "input": {"file_path": path, "old_string": old, "new_string": new}}}


SCRIPT = [write("a.txt", "a new\n"), edit("b.txt", "b original", "b after one"), {"text": "one done"},
          edit("b.txt", "b after one", "b after two"), write("c.txt", "c new\n"), {"text": "two done"}]


def project(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "b.txt").write_text("b original\n")
    os.chmod(work / "b.txt", 0o640)
    return work


def cli_in(work):
    return lambda args, env, sim=None: cli(args, env, work, sim)


def test_a_rewind_puts_back_the_files_and_the_conversation_from_the_store(any_store, tmp_path):
    work, env = project(tmp_path), env_for(tmp_path, any_store)
    run = cli_in(work)
    with Simulator([*SCRIPT, {"text": "three"}]) as sim:
        sid = two_prompts_in(run, env, sim)
        listed = run(["rewind", "--session", sid], env).stdout.splitlines()
        assert len(listed) == 2 and "2 file(s): a.txt, b.txt" in listed[0] and "2 file(s): b.txt, c.txt" in listed[1]
        back = run(["rewind", "--session", sid, "--to", "2", "--both"], env)
        assert back.returncode == 0, back.stderr
        assert back.stdout.splitlines() == [f"restored: {work / 'b.txt'}",
                                            f"removed: {work / 'c.txt'} (created after that prompt)",
                                            f"conversation rewound to before prompt 2; `loopwright -r {sid}` "
                                            "continues from there"]
        assert (work / "b.txt").read_text() == "b after one\n" and not (work / "c.txt").exists()
        assert run(["-p", "third", "-r", sid], env, sim).returncode == 0
        sent = json.dumps(sim.message_requests[-1].body["messages"])
    assert "first" in sent and "one done" in sent and "second" not in sent and "two done" not in sent
    assert run(["rewind", "--session", sid, "--to", "1"], env).returncode == 0
    assert (work / "b.txt").read_text() == "b original\n" and not (work / "a.txt").exists()
    assert oct(os.stat(work / "b.txt").st_mode & 0o777) == "0o640"  # the mode comes back too
    if any_store.startswith("postgresql"):
        assert in_home(tmp_path) == []
    else:
        assert "index.jsonl" in in_home(tmp_path) and "blobs" in in_home(tmp_path)  # the file layout, as before


def two_prompts_in(run, env, sim):
    first = run(["-p", "first", "--permission-mode", "acceptEdits", "--output-format", "json"], env | ON, sim)
    assert first.returncode == 0, first.stderr
    sid = json.loads(first.stdout)["session_id"]
    second = run(["-p", "second", "-r", sid, "--permission-mode", "acceptEdits"], env | ON, sim)
    assert second.returncode == 0, second.stderr
    return sid


def test_a_rewind_of_a_session_another_process_writes_is_refused_before_any_file_changes(any_store, tmp_path):
    work, env = project(tmp_path), env_for(tmp_path, any_store)
    run = cli_in(work)
    with Simulator(SCRIPT) as sim:
        sid = two_prompts_in(run, env, sim)
    holder = stores(any_store, work, tmp_path).sessions.open(sid)  # another process's writer, as far as rewind can tell
    try:
        out = run(["rewind", "--session", sid, "--to", "1", "--both"], env)
    finally:
        holder.close()
    said = f"loopwright: error: --session {sid}: cannot rewind its conversation: "
    assert out.returncode == 2 and out.stderr.startswith(said) and "another loopwright process" in out.stderr
    assert (work / "a.txt").exists() and (work / "b.txt").read_text() == "b after two\n"
    missing = run(["rewind", "--session", "no-such-session"], env)
    assert missing.returncode == 2 and "no such session" in missing.stderr


def test_any_file_name_and_any_bytes_are_kept_and_put_back(any_store, tmp_path):
    odd = os.fsdecode(bytes(tmp_path / "work") + b"/\xff-name.bin")  # not UTF-8: kept as the file system's bytes
    os.makedirs(os.path.dirname(odd))
    with open(odd, "wb") as f:
        f.write(b"\x00\x01binary\xfe\n")
    store = open_store(any_store, tmp_path)
    kept = Checkpoints(store.checkpoints("s-odd"), clock=lambda: 1.0)
    kept.begin()
    kept.prompt("prompt-1")
    kept.before_write(odd)
    kept.before_write(odd)  # once a checkpoint
    with open(odd, "wb") as f:
        f.write(b"changed")
    again = Checkpoints(store.checkpoints("s-odd"))  # as a later process reads it
    [checkpoint] = again.list()
    assert (checkpoint.number, checkpoint.prompt_id, checkpoint.time, checkpoint.files) == (1, "prompt-1", 1.0, (odd,))
    assert again.rewind(checkpoint) == [f"restored: {odd}"]
    with open(odd, "rb") as f:
        assert f.read() == b"\x00\x01binary\xfe\n"
    assert again.number == 1 and Checkpoints(store.checkpoints("s-other")).list() == []


# ------------------------------------------------------------------------------ workflows

SIX = '''
async def main(wf, args):
    async def draft(topic):
        return await wf.agent(f"DRAFT {topic}")

    async def review(text):
        return await wf.agent(f"REVIEW {text}")

    return " | ".join(await wf.parallel(*(wf.pipeline(topic, draft, review) for topic in args)))
'''


def workflow_place(tmp_path):
    work = tmp_path / "proj"
    (work / ".loopwright" / "workflows").mkdir(parents=True)
    (work / ".loopwright" / "workflows" / "six.py").write_text(textwrap.dedent(SIX))
    return work


def steps(store, work, sid):
    records, _ = stores(store, work, work.parent).journal(sid).read()
    return [r for r in records if r.get("type") == "step"]


def test_a_killed_workflow_replays_its_finished_agents_from_the_store(any_store, tmp_path):
    work, env = workflow_place(tmp_path), env_for(tmp_path, any_store)
    sid = "6f1a0c1e-0000-4000-8000-00000000db01"
    with Simulator(rules(review_delay=30)) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "workflow", "run", "six", "alpha", "beta",
                                 "gamma", "--session-id", sid], env=env | {"ANTHROPIC_BASE_URL": sim.base_url},
                                cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: len(steps(any_store, work, sid)) == 3 and len(sim.message_requests) == 6)
        finally:
            if proc.poll() is None:
                kill9(proc)
    assert sorted(r["text"] for r in steps(any_store, work, sid)) == ["draft-alpha", "draft-beta", "draft-gamma"]

    with Simulator(rules()) as sim:
        out = cli(["workflow", "run", "--resume", sid, "--output-format", "json"], env, work, sim)
        prompts = [json.dumps(r.body["messages"]) for r in sim.message_requests]
    result = json.loads(out.stdout)
    assert result["result"] == "reviewed-alpha | reviewed-beta | reviewed-gamma", out.stderr
    assert len(prompts) == 3 and all("REVIEW" in p and "DRAFT" not in p for p in prompts)  # no draft asked again
    assert result["workflow"]["agents"] == 6 and result["workflow"]["replayed"] == 3
    assert len(steps(any_store, work, sid)) == 6
    if any_store.startswith("postgresql"):
        assert in_home(tmp_path) == [] and result["workflow"]["journal"].endswith(f"#session={sid}&journal")
    else:
        assert result["workflow"]["journal"].endswith(f"{sid}/workflow.jsonl")


def test_an_interrupted_workflow_resumes_from_the_store_and_the_next_one_starts_afresh(any_store, tmp_path):
    work, env = workflow_place(tmp_path), env_for(tmp_path, any_store)
    sid = "6f1a0c1e-0000-4000-8000-00000000db02"
    with Simulator(rules(review_delay=30)) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "workflow", "run", "six", "alpha", "--session-id",
                                 sid, "--output-format", "json"], env=env | {"ANTHROPIC_BASE_URL": sim.base_url},
                                cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: len(steps(any_store, work, sid)) == 1 and len(sim.message_requests) == 2)
        finally:
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
    assert json.loads(out)["terminal_reason"] == "aborted", err
    with Simulator(rules()) as sim:
        out = cli(["-p", "/six alpha", "--resume", sid, "--output-format", "json"], env, work, sim)
        assert len(sim.message_requests) == 1  # the review only: the draft is replayed
    assert json.loads(out.stdout)["result"] == "reviewed-alpha", out.stderr
    with Simulator(rules()) as sim:  # another workflow after a finished one: afresh, the first one set aside
        out = cli(["-p", "/six gamma", "--resume", sid], env, work, sim)
        assert len(sim.message_requests) == 2
    assert out.stdout == "reviewed-gamma\n", out.stderr
    assert [r["text"] for r in steps(any_store, work, sid)] == ["draft-gamma", "reviewed-gamma"]


# ------------------------------------------------------------------------------ the schema

def test_a_database_made_before_checkpoints_and_journals_gets_their_tables_and_keeps_its_rows(pg_db, tmp_path):
    import psycopg

    from loopwright.stores import postgres

    with psycopg.connect(pg_db, autocommit=True) as conn:  # as loopwright with schema version 2 left it
        conn.execute("CREATE SCHEMA loopwright")
        conn.execute("CREATE TABLE loopwright.meta (key text PRIMARY KEY, value text NOT NULL)")
        for step in postgres.MIGRATIONS[:2]:
            conn.execute(step)
        conn.execute("INSERT INTO loopwright.meta VALUES ('schema_version', '2')")
        conn.execute("INSERT INTO loopwright.sessions VALUES ('old', 'p', '/p', 1.0)")
    stores = open_store(pg_db, tmp_path)
    journal = stores.journal("old")
    journal.append({"type": "workflow", "name": "six"})
    assert journal.read() == ([{"type": "workflow", "name": "six"}], 0) and stores.sessions.exists("old")
    with psycopg.connect(pg_db, autocommit=True) as conn:
        assert conn.execute("SELECT value FROM loopwright.meta").fetchone()[0] == str(len(postgres.MIGRATIONS)) == "3"
