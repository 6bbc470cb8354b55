"""`loopwright replay` (issue 36): a real session, recorded through the real CLI against the
simulator, replays offline with no divergence on unchanged settings (tools in parallel, a goal with
a check and an evaluator, a subagent, a compaction), and each kind of divergence is caught by a
replay that changes one thing. Everything runs for real: the CLI in subprocesses, git, bwrap."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.testing import ReplayDiverged, Simulator, assert_replays

JUDGE = {"system_contains": "You decide whether an agent has met its goal"}
SUMMARY = {"last_user_contains": "conversation above is about to be replaced"}
SUBTASK = {"first_user_contains": "SUBTASK"}
CHECK = 'test -f done.txt && test -z "$LW_REPLAY_STRICT"'  # the environment can make it fail


def bash(command):
    return {"tool_use": {"name": "Bash", "input": {"command": command}}}


def make_env(base):
    home = base / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOPWRIGHT_STORE"))}
    env.update(LOOPWRIGHT_HOME=str(home / ".loopwright"), HOME=str(home), ANTHROPIC_API_KEY="sk-test")
    return env


def cli(args, env, cwd, sim=None, stdin=""):
    extra = {"ANTHROPIC_BASE_URL": sim.base_url} if sim else {}
    return subprocess.run([sys.executable, "-m", "loopwright", *args], env=dict(env, **extra), cwd=cwd,
                          capture_output=True, text=True, timeout=300, input=stdin)


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=cwd, check=True,
                   capture_output=True)


def transcript(env, session_id):
    found = list(Path(env["LOOPWRIGHT_HOME"], "projects").glob(f"*/{session_id}.jsonl"))
    assert found, session_id
    return found[0]


def goal_script(project):
    """The simulator's script of the goal session (see `recorded`)."""
    return {"rules": [
        {"match": JUDGE, "responses": [{"text": '{"ok": false, "reason": "show it"}'},
                                       {"text": '{"ok": true, "reason": "done.txt is there"}'}]},
        {"match": SUMMARY, "responses": [{"text": "<summary>read a.txt, echoed one and two</summary>"}]},
        {"match": SUBTASK, "responses": [bash("cat a.txt"), {"text": "a.txt holds hello"}]},
        {"responses": [
            {"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(project / "a.txt")}},
                         {"type": "tool_use", "name": "Glob", "input": {"pattern": "*.txt"}}]},
            {"tool_use": {"name": "Agent", "input": {"description": "look", "prompt": "SUBTASK: read a.txt"}}},
            bash("echo one"), bash("echo two"),
            {"fault": {"status": 400, "error_type": "invalid_request_error", "error_code": "context_length_exceeded",
                       "message": "prompt is too long: 1000 tokens > 900 maximum"}},
            {"text": "I think I am done"},
            bash("touch done.txt"), {"text": "done.txt created"},
            bash("ls"), {"text": "done.txt is listed"}]}]}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A goal session: parallel Read and Glob, a subagent running Bash, two echoes, a compaction
    forced by "prompt is too long", a failed check, then the evaluator says not yet, then met."""
    base = tmp_path_factory.mktemp("replay")
    env = make_env(base)
    project = base / "home" / "proj"
    project.mkdir(parents=True)
    (project / "a.txt").write_text("hello\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "start")
    script = goal_script(project)
    with Simulator(script) as sim:
        out = cli(["-p", "/goal done.txt exists", "--check", CHECK, "--allowedTools",
                   "Bash,Read,Glob,Agent", "--output-format", "json"], env, project, sim)
        assert not sim.unmatched and not sim.remaining(), out.stderr
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "goal_met", out.stderr
    path = transcript(env, result["session_id"])
    return {"env": env, "project": project, "path": path, "base": base}


def replay(recorded, *args, path=None, env=None):
    return cli(["replay", str(path or recorded["path"]), "--json", *args], env or recorded["env"], recorded["project"])


def report_of(out):
    assert out.stdout, out.stderr
    return json.loads(out.stdout)


def copy_session(recorded, to: Path, edit=None):
    """The transcript and its sidechains copied to `to` (a folder), the main records passed through `edit`."""
    src = recorded["path"]
    to.mkdir(parents=True, exist_ok=True)
    records = [json.loads(line) for line in src.read_text().splitlines()]
    if edit is not None:
        records = edit(records)
    dest = to / src.name
    dest.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    shutil.copytree(src.with_suffix(""), dest.with_suffix(""))
    return dest


def test_the_first_record_keeps_the_git_head_and_command_line(recorded):
    first = json.loads(recorded["path"].read_text().splitlines()[0])
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=recorded["project"], capture_output=True,
                          text=True).stdout.strip()
    assert first["gitHead"] == head and first["gitRoot"] == str(recorded["project"])
    assert first["argv"][:2] == ["-p", "/goal done.txt exists"]
    assert first["spec"] == {"version": 1, "prompt": "/goal done.txt exists", "check": [CHECK],
                             "allowed": ["Bash,Read,Glob,Agent"], "output_format": "json"}  # the run, as data
    statuses = [json.loads(line)["attachment"] for line in recorded["path"].read_text().splitlines()
                if '"goal_status"' in line]
    calls = [c for s in statuses for c in s.get("evaluatorCalls", [])]
    assert [json.loads(c["answer"]["content"][0]["text"])["ok"] for c in calls] == [False, True]
    assert all(c["evidence"].startswith("GOAL: done.txt exists") for c in calls)


def test_unchanged_settings_replay_without_divergence(recorded):
    before = sorted(p.name for p in recorded["project"].iterdir())
    out = replay(recorded)
    report = report_of(out)
    assert out.returncode == 0 and report["diverged"] is False, report
    assert report["projectFrom"].startswith("git commit") and report["wire"] == "anthropic"
    assert report["unanswered"] == [] and report["results"][0]["terminal_reason"] == "goal_met"
    assert sorted(p.name for p in recorded["project"].iterdir()) == before  # tools ran in the copy
    text = cli(["replay", str(recorded["path"])], recorded["env"], recorded["project"])
    assert text.returncode == 0 and "no divergence" in text.stdout


def test_a_session_recorded_before_sessions_kept_their_spec_replays_from_its_command_line(recorded, tmp_path):
    """The last release's first record kept only `argv`: the replay hands it to the CLI, which reads
    it with the flags' parser (the replay itself parses no flags), and flags given still hold."""
    def as_last_release(records):
        for r in records:
            r.pop("spec", None)
        return records

    path = copy_session(recorded, tmp_path / "old", as_last_release)
    assert not any("spec" in json.loads(line) for line in path.read_text().splitlines())
    out = replay(recorded, path=path)
    report = report_of(out)
    assert out.returncode == 0 and report["diverged"] is False, json.dumps(report, indent=1)[:3000]
    (command,) = report["commands"]
    assert command[0] == "--run-spec" and json.loads(command[1])["argv"][:2] == ["-p", "/goal done.txt exists"]
    limited = replay(recorded, "--", "--max-turns", "2", path=path)
    first = report_of(limited)["divergence"]
    assert limited.returncode == 1 and first["kind"] == "limit" and "max_turns" in first["why"], first

    def before_replays(records):  # nor a command line: the prompt runs with the replay's flags alone
        for r in records:
            r.pop("spec", None), r.pop("argv", None)
        return records

    out = replay(recorded, path=copy_session(recorded, tmp_path / "older", before_replays))
    report = report_of(out)  # it runs (and leaves the record: the goal was in the flags it no longer has)
    assert "does not record its command line" in report["warnings"][-1]
    assert report["commands"][0][:2] == ["--run-spec", '{"argv": []}'] and report["results"][0]["num_turns"] > 0


def test_a_tool_result_that_differs_is_shown_as_a_diff(recorded, tmp_path):
    def edit(records):
        for r in records:  # the record says `echo one` printed "uno"
            line = json.dumps(r)
            if '"content": "one"' in line:
                r.update(json.loads(line.replace('"content": "one"', '"content": "uno"')))
        return records

    out = replay(recorded, path=copy_session(recorded, tmp_path / "s", edit))
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "tool_result" and first["chain"] == "main"
    assert "-uno" in first["diff"] and "+one" in first["diff"]


@pytest.fixture
def project_settings(recorded):
    path = recorded["project"] / ".claude" / "settings.json"
    path.parent.mkdir(exist_ok=True)
    yield path
    shutil.rmtree(path.parent)


def test_a_hook_that_now_blocks_is_a_divergence(recorded, project_settings):
    project_settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo 'no shell today' >&2; exit 2"}]}]}}))
    out = replay(recorded)
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "blocked" and "PreToolUse hook" in first["why"], first
    assert first["chain"].startswith("subagent")  # the subagent's `cat a.txt` is the first Bash call


def test_a_rule_that_now_denies_is_a_divergence(recorded, project_settings):
    project_settings.write_text(json.dumps({"permissions": {"deny": ["Bash(echo two)"]}}))
    out = replay(recorded)
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "blocked" and "permission gate" in first["why"]
    assert first["chain"] == "main" and "Permission denied for Bash" in first["replayed"]


def test_a_goal_check_that_now_fails_is_a_divergence(recorded):
    out = replay(recorded, env=dict(recorded["env"], LW_REPLAY_STRICT="1"))
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "goal", first
    assert "not met (show it) in the record, not met (a check failed) now" in first["why"]


def test_a_changed_goal_changes_the_prompt(recorded):
    out = replay(recorded, "--", "--check", "test -f never.txt")
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "prompt" and first["chain"] == "main", first
    assert "test -f never.txt" in first["diff"]


def test_a_lower_max_turns_trips_earlier(recorded):
    out = replay(recorded, "--", "--max-turns", "2")
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "limit" and "max_turns" in first["why"], first


def test_a_different_final_outcome_is_a_divergence(recorded, tmp_path):
    def edit(records):
        for r in records:
            if r.get("subtype") == "run_result":
                r.update(resultSubtype="error_during_execution", terminalReason="goal_impossible", isError=True)
        return records

    out = replay(recorded, path=copy_session(recorded, tmp_path / "s", edit))
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "outcome" and "goal_impossible" in first["why"], first


def test_check_a_folder_for_ci(recorded, tmp_path):
    good = tmp_path / "good"
    copy_session(recorded, good)
    out = cli(["replay", "--check", str(good)], recorded["env"], recorded["project"])
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stderr

    def edit(records):
        return [r for r in records if r.get("subtype") != "run_result"] + [
            dict(next(r for r in records if r.get("subtype") == "run_result"), numTurns=99)]

    bad = tmp_path / "bad"
    copy_session(recorded, bad, edit)
    out = cli(["replay", "--check", str(bad)], recorded["env"], recorded["project"])
    assert out.returncode == 1 and out.stdout.startswith("DIVERGED"), out.stdout + out.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    out = cli(["replay", "--check", str(empty)], recorded["env"], recorded["project"])
    assert out.returncode == 2 and "no .jsonl transcript" in out.stderr


def test_export_scrubs_secrets_and_the_fixture_still_replays(recorded, tmp_path):
    env, project = recorded["env"], recorded["project"]
    secret = "sk-ant-api03-" + "x7" * 20
    script = [bash(f"echo 'Authorization: Bearer tok{secret[-12:]}' && ls {project}/a.txt"), {"text": f"saw {secret}"}]
    with Simulator(script) as sim:
        out = cli(["-p", f"remember {secret} in {project}", "--allowedTools", "Bash", "--output-format", "json"],
                  env, project, sim)
    sid = json.loads(out.stdout)["session_id"]
    fixture = tmp_path / "fixtures" / "echo.jsonl"
    done = cli(["replay", "--export", sid, str(fixture)], env, project)
    assert done.returncode == 0, done.stderr
    text = fixture.read_text()
    assert secret not in text and f"tok{secret[-12:]}" not in text and str(Path(env["HOME"])) not in text
    assert "[REDACTED]" in text and "~/proj" in text
    assert '"tool_started"' not in text  # trimmed to what a replay reads

    # the fixture replays in the project (its recorded folder, ~/proj, means nothing elsewhere)
    old = dict(os.environ)
    os.environ.update(LOOPWRIGHT_HOME=env["LOOPWRIGHT_HOME"], HOME=env["HOME"])
    try:
        report = assert_replays(fixture, cwd=project)
        assert "of this folder" in report.source
        with pytest.raises(ReplayDiverged, match="limit"):
            assert_replays(fixture, "--max-turns", "1", cwd=project)
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_the_pytest_plugin_replays_a_fixture(recorded, tmp_path):
    suite = tmp_path / "suite"
    fixtures = suite / "sessions"
    copy_session(recorded, fixtures)
    (suite / "conftest.py").write_text('pytest_plugins = ["loopwright.testing.pytest_replay"]\n')
    (suite / "test_sessions.py").write_text(
        "from pathlib import Path\n\n"
        "def test_recorded(assert_replays):\n"
        "    for path in sorted(Path(__file__).parent.joinpath('sessions').glob('*.jsonl')):\n"
        "        assert_replays(path)\n\n"
        "def test_recorded_fails_when_limited(assert_replays):\n"
        "    for path in sorted(Path(__file__).parent.joinpath('sessions').glob('*.jsonl')):\n"
        "        assert_replays(path, '--max-turns', '1')\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)],
                         env=recorded["env"], cwd=suite, capture_output=True, text=True, timeout=600)
    assert "1 failed, 1 passed" in out.stdout, out.stdout[-3000:]
    assert "DIVERGED (limit" in out.stdout


def test_a_session_recorded_over_chat_completions_replays(tmp_path):
    env = make_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "n.txt").write_text("7\n")
    script = [{"content": [{"type": "tool_use", "name": "Read", "input": {"file_path": str(project / "n.txt")}},
                           {"type": "tool_use", "name": "Glob", "input": {"pattern": "*.txt"}}]},
              bash("echo $((7 * 6))"), {"text": "the answer is 42"}]
    with Simulator(script) as sim:
        out = cli(["-p", "multiply", "--allowedTools", "Bash,Read,Glob", "--output-format", "json", "--model",
                   f"openai-compatible:{sim.base_url}/v1#local-model"], env, project)
        assert sim.chat_requests and not sim.unmatched, out.stderr
    sid = json.loads(out.stdout)["session_id"]
    out = cli(["replay", sid, "--json"], env, project)
    report = report_of(out)
    assert out.returncode == 0 and report["wire"] == "openai" and not report["diverged"], json.dumps(report, indent=1)[:4000]
    assert "no git commit" in report["projectFrom"]
    out = cli(["replay", sid, "--json", "--", "--disallowedTools", "Bash"], env, project)
    assert report_of(out)["divergence"]["kind"] == "blocked"


def test_bad_input_is_named(recorded, tmp_path):
    env, project = recorded["env"], recorded["project"]
    out = cli(["replay", "no-such-session"], env, project)
    assert out.returncode == 2 and "no-such-session: no such session" in out.stderr
    out = cli(["replay", str(tmp_path / "missing.jsonl")], env, project)
    assert out.returncode == 2 and "no such transcript file" in out.stderr
    out = cli(["replay", "--export", str(recorded["path"]), str(tmp_path / "out.txt")], env, project)
    assert out.returncode == 2 and "ending in .jsonl" in out.stderr


def test_the_demo_records_changes_a_hook_and_the_replay_catches_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    out = subprocess.run([sys.executable, str(Path(__file__).parents[1] / "examples" / "replay" / "demo.py"),
                          "--dir", str(tmp_path / "demo")], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "no divergence" in out.stdout and "is now blocked by a PreToolUse hook" in out.stdout


def test_a_session_in_postgresql_replays_with_its_subagent(pg_db, tmp_path):
    env = make_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    script = {"rules": [{"match": SUBTASK, "responses": [bash("echo from the subagent"), {"text": "sub done"}]},
                        {"responses": [{"tool_use": {"name": "Agent", "input": {
                            "description": "d", "prompt": "SUBTASK: echo"}}}, {"text": "all done"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "delegate", "--allowedTools", "Bash,Agent", "--output-format", "json", "--store", pg_db],
                  env, project, sim)
    sid = json.loads(out.stdout)["session_id"]
    report = report_of(cli(["replay", sid, "--json", "--store", pg_db], env, project))
    assert not report["diverged"] and report["transcript"].endswith(f"#session={sid}"), report
    # the sidechain came from the store: a subagent whose command now fails diverges there
    report = report_of(cli(["replay", sid, "--json", "--store", pg_db, "--", "--disallowedTools", "Bash"], env, project))
    assert report["divergence"]["chain"].startswith("subagent") and report["divergence"]["kind"] == "blocked"


def test_the_recorded_command_line_keeps_no_secret_and_no_store(tmp_path):
    """The first record keeps the command line for a replay: never a key, a URL's password or the
    store's address (where the record lives, not how the run behaves)."""
    import glob
    import json as _json
    import os as _os
    import subprocess as _sp
    import sys as _sys

    from loopwright.testing import Simulator

    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    settings = _json.dumps({"env": {"SOME_TOKEN": "sk-ant-0123456789abcdefghij"}})
    with Simulator([{"text": "ok"}]) as sim:
        env = {k: v for k, v in _os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
        env.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test", HOME=str(tmp_path),
                   LOOPWRIGHT_HOME=str(home))
        out = _sp.run([_sys.executable, "-m", "loopwright", "-p", "hi", "--settings", settings,
                       "--append-system-prompt", "mirror at http://user:hunter2@example.invalid/x"],
                      capture_output=True, text=True, env=env, cwd=project, timeout=60)
    assert out.returncode == 0, out.stderr
    [transcript] = glob.glob(str(home / "projects" / "*" / "*.jsonl"))
    text = open(transcript, encoding="utf-8").read()
    first = _json.loads(text.splitlines()[0])
    assert first["argv"][:2] == ["-p", "hi"] and "--store" not in " ".join(first["argv"])
    assert "sk-ant-0123456789" not in text and "hunter2" not in text and "[REDACTED]" in text
    from loopwright.cli.core import recorded_argv

    assert recorded_argv(["-p", "x", "--store", "postgresql://u:pw@h/db", "--store=sqlite:///a.db", "-c"]) == \
        ["-p", "x", "-c"]
