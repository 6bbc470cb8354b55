"""Killed at random points while its records are fsynced once a step in a worker thread (issue 32
item 2): a real `loopwright -p` process of many Bash turns, each appending its number to a file,
SIGKILLed after a random number of them; then every command that left its mark has its
tool_started record in the transcript, and a resume runs none of them again."""

import random

from loopwright.stores.jsonl import read_records
from loopwright.testing import Simulator
from test_crash import bash, kill9, run, setup, start, transcript, wait_for

TURNS = 12


def test_kill_at_random_points_loses_no_started_tool_and_runs_none_twice(tmp_path):
    rng = random.Random()
    seed = rng.randrange(1 << 30)
    rng.seed(seed)
    for attempt in range(3):
        (tmp_path / f"a{attempt}").mkdir()
        work, home, sid = setup(tmp_path / f"a{attempt}")
        marks = work / "marks.txt"
        script = [{"tool_use": bash(f"echo {i} >> marks.txt", f"toolu_{i}")} for i in range(TURNS)] + [{"text": "end"}]
        kill_after = rng.randrange(1, TURNS)
        with Simulator(script) as sim:
            proc = start(["-p", "mark", "--session-id", sid, "--allowedTools", "Bash"], sim, work, home)
            wait_for(lambda: marks.exists() and len(marks.read_text().splitlines()) >= kill_after)
            kill9(proc)
        ran = marks.read_text().splitlines()
        records, _ = read_records(transcript(home, work, sid))
        started = {r["toolUseId"] for r in records if r["type"] == "tool_started"}
        assert {f"toolu_{n}" for n in ran} <= started, f"seed {seed}: a command ran with no tool_started record"
        assert len(ran) == len(set(ran)), f"seed {seed}"

        # resumed: the model is told what happened and ends; nothing already started runs again
        with Simulator([{"text": "finished"}]) as sim:
            out = run(["-p", "-r", sid, "go on", "--allowedTools", "Bash"], sim, work, home)
        assert out.returncode == 0, f"seed {seed}: {out.stderr}"
        # A command started just before the kill may still be writing its mark after `ran` was read
        # (its sandbox is killed once loopwright's death is seen), so the marks are judged against
        # the records: each mark once, each from a call started before the resume, none restarted.
        final = marks.read_text().splitlines()
        assert final[:len(ran)] == ran and len(final) == len(set(final)), f"seed {seed}: a command ran again on resume"
        assert {f"toolu_{n}" for n in final} <= started, f"seed {seed}: a command ran on resume"
        records, _ = read_records(transcript(home, work, sid))
        restarted = [r["toolUseId"] for r in records if r["type"] == "tool_started"]
        assert sorted(restarted) == sorted(started), f"seed {seed}: the resume started a call again"
