"""Schedules keep a `RunSpec`, not a command line: `schedule add` reads its flags once into the spec
it stores, each fire runs that spec (`loopwright --run-spec`, printing what `-p` prints), a
schedule stored by the last release (its flags) still fires and is brought up to a spec once, and a
stored spec that cannot be run fails its fire naming the schedule and the field."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from loopwright.stores.schedules import SqliteScheduleStore
from loopwright.testing import Simulator


def cli(args, tmp_path, sim=None, *, cwd=None, stdin=""):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "fakehome"))
    if sim is not None:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
    return subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=cwd or tmp_path, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)


def old_schedule(tmp_path, sid, options, prompt="keep going"):
    """A schedule row as the last release wrote it: the fire's `-p` flags under options["args"]."""
    (tmp_path / "home").mkdir(exist_ok=True)
    SqliteScheduleStore(tmp_path / "home" / "schedules.db").close()  # the tables, as any release makes them
    db = sqlite3.connect(tmp_path / "home" / "schedules.db")
    db.execute("INSERT INTO schedules (id, cwd, prompt, every_s, created, next_at, paused, max_runs, runs, grace_s, "
               "options, cron) VALUES (?, ?, ?, 3600, 1.0, 2.0, 0, NULL, 0, 1000000000, ?, '')",
               (sid, str(tmp_path), prompt, json.dumps(options)))
    db.commit()
    db.close()


def stored_options(tmp_path, sid):
    db = sqlite3.connect(tmp_path / "home" / "schedules.db")
    (options,) = db.execute("SELECT options FROM schedules WHERE id = ?", (sid,)).fetchone()
    db.close()
    return json.loads(options)


def test_schedule_add_stores_the_run_as_a_spec_read_from_its_flags_once(tmp_path):
    out = cli(["schedule", "add", "--every", "1h", "--id", "nightly", "--prompt=-v is a prompt", "--",
               "--max-turns", "3", "--allowedTools", "Bash", "Edit", "--no-sandbox"], tmp_path)
    assert out.returncode == 0, out.stderr
    options = stored_options(tmp_path, "nightly")
    assert set(options) == {"spec", "args"}  # no command line is kept to parse again at each fire:
    assert options["args"] == ["--stored-by-a-newer-loopwright"]  # only a flag that fails an older release's fire
    spec = options["spec"]
    assert spec["version"] == 1 and spec["prompt"] == "-v is a prompt" and spec["max_turns"] == 3
    assert spec["allowed"] == ["Bash", "Edit"] and spec["sandbox"] is False and spec["output_format"] == "json"


def test_a_schedule_stored_by_the_last_release_still_fires_and_is_migrated_once(tmp_path):
    old_schedule(tmp_path, "legacy", {"args": ["--max-turns", "1"]})
    with Simulator([{"tool_use": {"name": "Read", "input": {"file_path": "x"}}, "repeat": -1}]) as sim:
        served = cli(["scheduler", "--once"], tmp_path, sim)
        requests = len(sim.message_requests)
    assert served.returncode == 0, served.stderr
    assert requests == 1  # its flags held: one turn, then the fire ended on its limit
    (run,) = json.loads(cli(["schedule", "runs", "--json"], tmp_path).stdout)
    assert run["status"] == "error" and "Reached maximum number of turns (1)" in run["note"]
    options = stored_options(tmp_path, "legacy")  # written back: the flags are read no more
    assert options["args"] == ["--stored-by-a-newer-loopwright"]
    assert options["spec"]["max_turns"] == 1 and options["spec"]["prompt"] == "keep going"


def test_schedule_list_brings_an_old_schedule_to_a_spec(tmp_path):
    old_schedule(tmp_path, "legacy", {"args": ["--model", "sonnet"], "queue": "q"})
    (listed,) = json.loads(cli(["schedule", "list", "--json"], tmp_path).stdout)
    assert listed["spec"]["model"] == "sonnet" and listed["queue"] == "q"
    assert stored_options(tmp_path, "legacy") == {"spec": listed["spec"], "queue": "q",
                                                  "args": ["--stored-by-a-newer-loopwright"]}


def test_a_bad_stored_spec_fails_its_fire_naming_the_schedule_and_the_field(tmp_path):
    old_schedule(tmp_path, "broken", {"spec": {"version": 1, "prompt": "x", "max_turns": "5"}})
    old_schedule(tmp_path, "badflags", {"args": ["--max-turns", "zero"]})
    with Simulator([{"text": "never", "repeat": -1}]) as sim:
        served = cli(["scheduler", "--once"], tmp_path, sim)
        requests = len(sim.message_requests)
    assert served.returncode == 0 and requests == 0, served.stderr
    notes = {r["schedule_id"]: (r["status"], r["note"]) for r in
             json.loads(cli(["schedule", "runs", "--json"], tmp_path).stdout)}
    assert notes["broken"][0] == "error"
    assert "schedule 'broken': run spec: field 'max_turns': expected a whole number" in notes["broken"][1]
    assert notes["badflags"][0] == "error" and "schedule 'badflags': its flags ['--max-turns', 'zero']" in \
        notes["badflags"][1] and "--max-turns" in notes["badflags"][1]
    assert "loopwright: warning: schedule 'badflags'" in served.stderr  # said when the scheduler started
    assert stored_options(tmp_path, "badflags") == {"args": ["--max-turns", "zero"]}  # left as it was


def test_run_spec_prints_what_dash_p_prints_and_flags_replace_the_specs_fields(tmp_path):
    spec = {"version": 1, "prompt": "say hi", "bare": True}
    (tmp_path / "spec.json").write_text(json.dumps({**spec, "max_turns": 5}))
    rules = [{"match": {"last_user_contains": "say hi"}, "responses": [{"text": "hi there", "repeat": -1}]}]
    with Simulator({"rules": rules}) as sim:
        by_flags = cli(["-p", "say hi", "--bare"], tmp_path, sim)
        by_spec = cli(["--run-spec", "-"], tmp_path, sim, stdin=json.dumps(spec))
        as_json = cli(["--run-spec", str(tmp_path / "spec.json"), "--output-format", "json", "--max-turns", "1"],
                      tmp_path, sim)
        assert not sim.unmatched
    assert by_flags.returncode == by_spec.returncode == 0, by_spec.stderr
    assert by_spec.stdout == by_flags.stdout == "hi there\n"
    result = json.loads(as_json.stdout)
    assert result["result"] == "hi there" and result["num_turns"] == 1


def test_run_spec_refuses_a_bad_spec_in_one_line(tmp_path):
    for stdin, said in (("{\"version\": 2}", "--run-spec stdin: run spec: field 'version': expected 1"),
                        ("not json", "--run-spec stdin: not JSON"),
                        ("{\"version\": 1, \"promt\": \"x\"}", "unknown field(s) 'promt'")):
        out = cli(["--run-spec", "-"], tmp_path, stdin=stdin)
        assert out.returncode == 2 and said in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    missing = cli(["--run-spec", str(tmp_path / "nope.json")], tmp_path)
    assert missing.returncode == 2 and "cannot read it" in missing.stderr


def test_an_older_scheduler_fails_a_new_schedules_fire_instead_of_dropping_its_flags(tmp_path):
    """A release from before specs fires `loopwright -p --output-format json [options["args"]] -- PROMPT`:
    what this one leaves there makes that fire fail with a result that says why, never run the prompt
    without the schedule's limits and rules."""
    assert cli(["schedule", "add", "x", "--every", "1h", "--id", "s", "--", "--disallowedTools", "Bash"],
               tmp_path).returncode == 0
    args = stored_options(tmp_path, "s")["args"]
    with Simulator([{"text": "ran unguarded", "repeat": -1}]) as sim:
        old_fire = cli(["-p", "--output-format", "json", *args, "--", "x"], tmp_path, sim)
        requests = len(sim.message_requests)
    assert old_fire.returncode == 2 and requests == 0
    result = json.loads(old_fire.stdout)
    assert result["is_error"] and "unrecognized arguments: --stored-by-a-newer-loopwright" in result["errors"][0]
