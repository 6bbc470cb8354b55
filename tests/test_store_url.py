"""Store by URL (issue 14 part 1): `--store` / LOOPWRIGHT_STORE pick where sessions, schedules and
routine ledgers live; unset or `sqlite:` is the embedded default, a bad URL is one clear error, and
`loopwright session export ID` gives the Claude Code transcript from whichever store holds it."""

import json
import sqlite3

import pytest
from test_goal_session import cli, env, transcript  # noqa: F401  (env is a fixture)

from loopwright.core.errors import UsageError
from loopwright.stores import open_store, redact, store_url
from loopwright.testing import Simulator

TOOL_RUN = [{"tool_use": {"name": "Bash", "input": {"command": "echo hi"}}}, {"text": "done"}]


def test_the_flag_wins_over_the_variable_and_unset_is_the_default():
    assert store_url("sqlite:", {"LOOPWRIGHT_STORE": "postgresql://x/y"}) == "sqlite:"
    assert store_url(None, {"LOOPWRIGHT_STORE": " postgresql://x/y "}) == "postgresql://x/y"
    assert store_url(None, {}) == ""


@pytest.mark.parametrize("url, needle", [
    ("mysql://h/db", "unknown scheme 'mysql'"),
    ("postgresql:db", "expected sqlite:///PATH"),
    ("sqlite://relative.db", "absolute PATH"),
    ("/tmp/x.db", "unknown scheme"),
])
def test_a_bad_url_is_one_error_naming_it_and_the_schemes(tmp_path, url, needle):
    with pytest.raises(UsageError) as caught:
        open_store(url, tmp_path, {"LOOPWRIGHT_HOME": str(tmp_path)})
    message = str(caught.value)
    assert needle in message and "sqlite:///PATH" in message and "--store/LOOPWRIGHT_STORE" in message


def test_a_password_never_shows_in_messages():
    assert redact("postgresql://me:secret@db:5432/loops?sslmode=require") == "postgresql://me:***@db:5432/loops?sslmode=require"
    assert "secret" not in redact("postgresql://db/loops?password=secret&x=1")
    with pytest.raises(UsageError) as caught:
        open_store("postgres:me:secret@db", "/")
    assert "secret" not in str(caught.value)


def test_the_default_keeps_files_where_they_were(tmp_path):
    stores = open_store("", tmp_path / "work", {"LOOPWRIGHT_HOME": str(tmp_path / "home")})
    assert stores.files and stores.db_path == tmp_path / "home" / "schedules.db"
    assert stores.sessions.project.parent == tmp_path / "home" / "projects"
    named = open_store(f"sqlite://{tmp_path}/elsewhere.db", tmp_path, {"LOOPWRIGHT_HOME": str(tmp_path / "home")})
    ledger = named.ledger()
    ledger.note("r", "item-1", 1.0)
    ledger.close()
    assert sqlite3.connect(tmp_path / "elsewhere.db").execute("SELECT item_id FROM routine_items").fetchall() == [
        ("item-1",)]


def test_session_export_gives_the_transcript_bytes_of_the_default_store(env, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    with Simulator(TOOL_RUN) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", "Bash"], env, work, sim)
    sid = json.loads(out.stdout)["session_id"]
    exported = cli(["session", "export", sid], env, tmp_path)
    with open(transcript(env, sid)) as f:
        assert exported.stdout == f.read() and exported.returncode == 0
    cli(["session", "export", sid, "--output", str(tmp_path / "t.jsonl")], env, tmp_path)
    assert (tmp_path / "t.jsonl").read_text() == exported.stdout
    missing = cli(["session", "export", "nope"], env, tmp_path)
    assert missing.returncode != 0 and "no session nope in the store sqlite:" in missing.stderr


def test_a_bad_store_flag_stops_a_run_before_it_starts(env, tmp_path):
    out = cli(["-p", "hi", "--store", "redis://h/0"], env, tmp_path)
    assert out.returncode != 0 and "redis://h/0" in out.stderr and "postgresql://" in out.stderr
    out = cli(["schedule", "list", "--store", "bogus"], dict(env, LOOPWRIGHT_STORE="sqlite:"), tmp_path)
    assert out.returncode != 0 and "'bogus'" in out.stderr
