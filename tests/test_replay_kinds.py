"""The rest of issue 36's coverage: the whole session (parallel tools, a subagent, a compaction,
a goal with a check and an evaluator) recorded over the OpenAI-compatible wire into PostgreSQL
replays with no divergence, and diverges there when one thing changes; an evaluator's verdict that
changed is a `goal` divergence; a tool result that differs is caught over Chat Completions too."""

import json

from test_replay import CHECK, bash, cli, copy_session, git, goal_script, make_env, recorded, replay, report_of  # noqa: F401

from loopwright.testing import Simulator


def test_an_evaluator_verdict_that_changed_is_a_goal_divergence(recorded, tmp_path):  # noqa: F811
    def edit(records):
        for r in records:  # the record's first verdict was "met" (the loop read the same evaluator answer so)
            a = r.get("attachment") or {}
            if a.get("type") == "goal_status" and a.get("reason") == "show it":
                a.update(met=True, reason="it is plainly done")
        return records

    out = replay(recorded, path=copy_session(recorded, tmp_path / "s", edit))
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "goal" and first["chain"] == "main", first
    assert "met (it is plainly done) in the record, not met" in first["why"], first


def test_the_whole_session_over_chat_completions_in_postgresql_replays(pg_db, tmp_path):
    env = make_env(tmp_path)
    project = tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    (project / "a.txt").write_text("hello\n")
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-qm", "start")
    with Simulator(goal_script(project)) as sim:
        out = cli(["-p", "/goal done.txt exists", "--check", CHECK, "--allowedTools", "Bash,Read,Glob,Agent",
                   "--output-format", "json", "--store", pg_db, "--model",
                   f"openai-compatible:{sim.base_url}/v1#local-model"], env, project)
        assert sim.chat_requests and not sim.message_requests, out.stderr
        assert not sim.unmatched and not sim.remaining(), out.stderr
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "goal_met", out.stderr
    sid = result["session_id"]

    out = cli(["replay", sid, "--json", "--store", pg_db], env, project)
    report = report_of(out)
    assert out.returncode == 0 and not report["diverged"], json.dumps(report, indent=1)[:4000]
    assert report["wire"] == "openai" and report["projectFrom"].startswith("git commit")
    assert report["results"][0]["terminal_reason"] == "goal_met" and report["unanswered"] == []

    out = cli(["replay", sid, "--json", "--store", pg_db], dict(env, LW_REPLAY_STRICT="1"), project)
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "goal" and "a check failed" in first["why"], first


def test_a_tool_result_that_differs_over_chat_completions(tmp_path):
    env = make_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "n.txt").write_text("7\n")
    with Simulator([bash("cat n.txt"), {"text": "it says 7"}]) as sim:
        out = cli(["-p", "read n", "--allowedTools", "Bash", "--output-format", "json", "--model",
                   f"openai-compatible:{sim.base_url}/v1#local-model"], env, project)
    sid = json.loads(out.stdout)["session_id"]
    (project / "n.txt").write_text("8\n")  # the one change: the file the call reads (no git: today's files are copied)
    out = cli(["replay", sid, "--json"], env, project)
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "tool_result", first
    assert "-7" in first["diff"] and "+8" in first["diff"]


def test_a_limit_that_no_longer_trips_is_a_limit_divergence(tmp_path):
    env = make_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()
    with Simulator([bash("echo one"), bash("echo two"), {"text": "done"}]) as sim:
        out = cli(["-p", "echo twice", "--allowedTools", "Bash", "--max-turns", "1", "--output-format", "json"],
                  env, project, sim)
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "max_turns", out.stdout
    assert not report_of(cli(["replay", result["session_id"], "--json"], env, project))["diverged"]
    out = cli(["replay", result["session_id"], "--json", "--", "--max-turns", "5"], env, project)
    first = report_of(out)["divergence"]
    assert out.returncode == 1 and first["kind"] == "limit" and "the record ended here on a limit (max_turns)" in first["why"], first


def test_the_prompts_of_one_process_share_its_command_line(tmp_path):
    """Two prompts through `--input-format stream-json` (one process, one command line): the
    second replays with the first's flags, here a rule that denies its call."""
    env = make_env(tmp_path)
    project = tmp_path / "proj"
    project.mkdir()

    def user(text):
        return json.dumps({"type": "user", "message": {"role": "user", "content": text}})

    with Simulator([{"text": "first answered"}, bash("echo b"), {"text": "b was denied"}]) as sim:
        out = cli(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
                   "--allowedTools", "Bash", "--disallowedTools", "Bash(echo b)"], env, project, sim,
                  stdin=user("first") + "\n" + user("say b") + "\n")
        assert not sim.unmatched and not sim.remaining(), out.stderr
    sid = next(json.loads(line)["session_id"] for line in out.stdout.splitlines() if '"session_id"' in line)
    out = cli(["replay", sid, "--json"], env, project)
    report = report_of(out)
    assert out.returncode == 0 and not report["diverged"], json.dumps(report, indent=1)[:3000]
    assert len(report["commands"]) == 2 and all("Bash(echo b)" in " ".join(c) for c in report["commands"])
