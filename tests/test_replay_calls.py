"""`loopwright replay` answers the model calls beside the conversation — prompt hooks (`type:
"prompt"`, judged by a model) and the auto-mode classifier — from what the session recorded
(`system/model_call` records), and replays each prompt of a session with the flags it was given."""

import json

from test_replay import bash, cli, make_env, report_of

from loopwright.testing import Simulator

HOOK_JUDGE = {"system_contains": "You check a hook condition"}
CLASSIFIER = {"system_contains": "autonomous coding agent wants to take"}
WRITE = {"name": "Bash", "input": {"command": "python3 -c \"open('made.txt','w').write('x')\""}}


def records(env, session_id):
    from test_replay import transcript

    return [json.loads(line) for line in transcript(env, session_id).read_text().splitlines()]


def prompt_hook(project, prompt):
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "prompt", "prompt": prompt}]}]}}))


def test_a_prompt_hooks_calls_are_recorded_and_replayed(tmp_path):
    env = make_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    prompt_hook(project, "Allow only harmless echo commands. $ARGUMENTS")
    script = {"rules": [{"match": HOOK_JUDGE, "responses": [{"text": '{"ok": true}'}]},
                        {"responses": [bash("echo hi"), {"text": "said hi"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "say hi", "--allowedTools", "Bash", "--output-format", "json"], env, project, sim)
        assert not sim.unmatched and not sim.remaining(), out.stderr
    sid = json.loads(out.stdout)["session_id"]
    [call] = [r for r in records(env, sid) if r.get("subtype") == "model_call"]
    assert call["purpose"] == "prompt_hook" and '"tool_name":"Bash"' in call["request"]
    assert call["answer"]["content"][0]["text"] == '{"ok": true}'
    from loopwright.web.transcript import Renderer

    shown = Renderer().record(call, 0)  # the session's page shows the call, as text
    assert "prompt hook" in shown and "what it was asked" in shown and "&quot;tool_name&quot;" in shown

    report = report_of(cli(["replay", sid, "--json"], env, project))
    assert not report["diverged"] and report["unanswered"] == [], json.dumps(report, indent=1)[:3000]

    # the hook's condition changed: the replay cannot know what the model would say, and says so
    prompt_hook(project, "Allow nothing at all. $ARGUMENTS")
    out = cli(["replay", sid, "--json"], env, project)
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "request" and first["chain"] == "a prompt hook", first
    assert first["recorded"].startswith("Allow only harmless") and first["replayed"].startswith("Allow nothing")
    assert "+Allow nothing at all" in first["diff"]


def test_the_auto_mode_classifiers_calls_are_recorded_and_replayed(tmp_path):
    env = make_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    script = {"rules": [{"match": CLASSIFIER, "responses": [{"text": "<block>no</block>"}]},
                        {"responses": [{"tool_use": WRITE}, {"text": "made it"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "make the file with python", "--permission-mode", "auto", "--output-format", "json"],
                  env, project, sim)
        assert not sim.unmatched and not sim.remaining(), out.stderr
    sid = json.loads(out.stdout)["session_id"]
    assert (project / "made.txt").exists()
    [call] = [r for r in records(env, sid) if r.get("subtype") == "model_call"]
    assert call["purpose"] == "classifier" and "open('made.txt'" in call["request"]

    out = cli(["replay", sid, "--json"], env, project)
    report = report_of(out)
    assert out.returncode == 0 and not report["diverged"], json.dumps(report, indent=1)[:3000]

    # the same session replayed in the default mode: the call is no longer the classifier's to allow
    out = cli(["replay", sid, "--json", "--", "--permission-mode", "default"], env, project)
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "blocked" and "permission gate" in first["why"], first


def test_each_prompt_replays_with_the_flags_it_was_given(tmp_path):
    """A session resumed with other flags: the second prompt was given `--disallowedTools Bash(echo b)`,
    and its replay is too (with the first prompt's flags the call would run, an `allowed` divergence)."""
    env = make_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    with Simulator([bash("echo a"), {"text": "said a"}, bash("echo b"), {"text": "b was denied"}]) as sim:
        out = cli(["-p", "say a", "--allowedTools", "Bash", "--output-format", "json"], env, project, sim)
        sid = json.loads(out.stdout)["session_id"]
        out = cli(["-p", "-r", sid, "say b", "--allowedTools", "Bash", "--disallowedTools", "Bash(echo b)",
                   "--output-format", "json"], env, project, sim)
        assert not sim.unmatched and not sim.remaining(), out.stderr
    kept = [r["argv"] for r in records(env, sid) if "argv" in r]
    assert len(kept) == 2 and "Bash(echo b)" in kept[1] and "Bash(echo b)" not in kept[0]

    out = cli(["replay", sid, "--json"], env, project)
    report = report_of(out)
    assert out.returncode == 0 and not report["diverged"], json.dumps(report, indent=1)[:3000]
    first, second = (" ".join(command) for command in report["commands"])  # each prompt's recorded run
    assert "Bash(echo b)" not in first and "Bash(echo b)" in second


def test_a_call_the_record_shows_blocked_and_that_now_runs_is_allowed(tmp_path):
    env = make_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"deny": ["Bash(echo b)"]}}))
    with Simulator([bash("echo b"), {"text": "b was denied"}]) as sim:
        out = cli(["-p", "say b", "--allowedTools", "Bash", "--output-format", "json"], env, project, sim)
    sid = json.loads(out.stdout)["session_id"]
    assert not report_of(cli(["replay", sid, "--json"], env, project))["diverged"]
    settings.write_text("{}")  # the one change: the rule is gone
    out = cli(["replay", sid, "--json"], env, project)
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "allowed" and "permission gate" in first["why"], first
    assert "-Permission denied for Bash" in first["diff"] and "+b" in first["diff"]


def test_a_prompt_hook_inside_a_subagent_is_replayed(tmp_path):
    """The hook's event data names the subagent by a random id: the replay's subagent has another."""
    env = make_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    prompt_hook(project, "Allow only harmless echo commands. $ARGUMENTS")
    script = {"rules": [{"match": HOOK_JUDGE, "responses": [{"text": '{"ok": true}'}]},
                        {"match": {"first_user_contains": "SUBTASK"}, "responses": [bash("echo sub"), {"text": "ok"}]},
                        {"responses": [{"tool_use": {"name": "Agent", "input": {"description": "d", "prompt": "SUBTASK"}}},
                                       {"text": "all done"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "delegate", "--allowedTools", "Bash,Agent", "--output-format", "json"], env, project, sim)
        assert not sim.unmatched and not sim.remaining(), out.stderr
    sid = json.loads(out.stdout)["session_id"]
    out = cli(["replay", sid, "--json"], env, project)
    report = report_of(out)
    assert out.returncode == 0 and not report["diverged"], json.dumps(report, indent=1)[:3000]
