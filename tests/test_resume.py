"""The session flags of a real `loopwright -p` process: -c, -r, --fork-session, --session-id,
--no-session-persistence, and LOOPWRIGHT_HOME (with HOME pointed away, so nothing real is touched)."""

import json
import os
import subprocess
import sys
import uuid

import pytest

from loopwright.stores.jsonl import project_name, read_records
from loopwright.testing import Simulator

CLI = [sys.executable, "-m", "loopwright"]


@pytest.fixture
def place(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    return work, tmp_path / "home", tmp_path / "fakehome"


def run(args, place, script=None, cwd=None):
    work, home, fakehome = place
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(home), HOME=str(fakehome))
    with Simulator(script or [{"text": "ok"}]) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        out = subprocess.run(CLI + ["-p", "--output-format", "json", *args], cwd=cwd or work, env=env,
                             capture_output=True, text=True, timeout=60)
        out.requests = sim.message_requests
    return out


def prompts(request):
    """The text of every message the model was sent, in order."""
    return [m["content"][0].get("text") for m in request.body["messages"]]


def sessions(place, cwd=None):
    work, home, _ = place
    return sorted(p.stem for p in (home / "projects" / project_name(cwd or work)).glob("*.jsonl"))


def test_a_run_writes_its_transcript_under_loopwright_home_only(place):
    work, home, fakehome = place
    out = run(["hello"], place)
    sid = json.loads(out.stdout)["session_id"]
    assert out.returncode == 0 and sessions(place) == [sid]
    assert not (fakehome / ".loopwright").exists()
    records, _ = read_records(home / "projects" / project_name(work) / f"{sid}.jsonl")
    assert [r["type"] for r in records] == ["user", "assistant", "system"]


def test_continue_picks_the_most_recent_session_of_this_directory(place, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run(["first"], place, [{"text": "one"}])
    second = json.loads(run(["second"], place, [{"text": "two"}]).stdout)["session_id"]
    run(["other dir"], place, [{"text": "x"}], cwd=elsewhere)
    out = run(["-c", "third"], place, [{"text": "three"}])
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["session_id"] == second
    assert prompts(out.requests[0]) == ["second", "two", "third"]


def test_resume_by_id_appends_to_the_same_file(place):
    first = json.loads(run(["remember 7"], place, [{"text": "noted"}]).stdout)["session_id"]
    out = run(["--resume", first, "what number?"], place, [{"text": "7"}])
    assert json.loads(out.stdout)["session_id"] == first and sessions(place) == [first]
    assert prompts(out.requests[0]) == ["remember 7", "noted", "what number?"]


def test_fork_session_copies_history_into_a_new_id(place):
    work, home, _ = place
    old = json.loads(run(["base"], place, [{"text": "b"}]).stdout)["session_id"]
    old_path = home / "projects" / project_name(work) / f"{old}.jsonl"
    before = old_path.read_bytes()
    out = run(["-r", old, "--fork-session", "branch"], place, [{"text": "c"}])
    new = json.loads(out.stdout)["session_id"]
    assert new != old and sorted(sessions(place)) == sorted([old, new])
    assert old_path.read_bytes() == before and prompts(out.requests[0]) == ["base", "b", "branch"]
    chosen = str(uuid.uuid4())
    out = run(["-c", "--fork-session", "--session-id", chosen, "again"], place)
    assert json.loads(out.stdout)["session_id"] == chosen


def test_no_session_persistence_writes_nothing(place):
    work, home, _ = place
    out = run(["--no-session-persistence", "quiet"], place)
    assert out.returncode == 0 and not home.exists()
    old = json.loads(run(["base"], place).stdout)["session_id"]
    path = home / "projects" / project_name(work) / f"{old}.jsonl"
    before = path.read_bytes()
    out = run(["-r", old, "--no-session-persistence", "peek"], place)
    assert out.returncode == 0 and path.read_bytes() == before and prompts(out.requests[0])[0] == "base"


@pytest.mark.parametrize("args,needle,code", [
    (["-r", "0d1c5d49-0000-4000-8000-000000000000", "x"],
     "No conversation found with session ID: 0d1c5d49-0000-4000-8000-000000000000", 1),
    (["-c", "x"], "No conversation found to continue", 1),
    (["--fork-session", "x"], "--fork-session needs --continue or --resume", 2),
    (["-c", "-r", "abc", "x"], "either --continue or --resume, not both", 2),
])
def test_session_errors_are_one_line(place, args, needle, code):
    out = run(args, place)
    assert out.returncode == code and out.stderr.strip().endswith(needle)
    assert len(out.stderr.strip().splitlines()) == 1 and out.requests == []


def test_session_id_rules(place):
    sid = str(uuid.uuid4())
    assert json.loads(run(["--session-id", sid, "x"], place).stdout)["session_id"] == sid
    reused = run(["--session-id", sid, "y"], place)
    assert reused.returncode == 1 and f"Session ID {sid} is already in use" in reused.stderr
    out = run(["-r", sid, "--session-id", str(uuid.uuid4()), "z"], place)
    assert out.returncode == 2 and "only with --fork-session" in out.stderr
