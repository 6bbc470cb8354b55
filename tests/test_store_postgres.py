"""Sessions in PostgreSQL (issue 14 part 1): a loop run with `--store postgresql://…` is resumed
by another process in another folder, its export is the transcript the JSONL store writes for the
same scripted run, a second writer is refused as with JSONL, a routine item killed with `kill -9`
resumes from its session in the database without running a tool twice, and psycopg stays out of
every run that does not use it."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

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
    """The records of a transcript without what differs between two runs of one script."""
    lines = data.decode().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k not in VOLATILE} for line in lines]


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
