"""Subagents (issue 10 item 3): the `Agent` tool hands a sub-task to an agent loop of its own —
its own request (the definition's prompt, the tools it names, its model), a fresh context — and
its final answer comes back as the tool result; what it spent counts as the parent's; several
calls in one response run at the same time; nesting stops three levels down; a definition
without its required fields is one warning naming the file. SubagentStart/SubagentStop hooks,
sidechain transcripts (whole after a crash or an interrupt; a resume never re-runs a finished
subagent), `--agents JSON` and the SDK's `agents`, init's `agents`, a goal judged only after the
subagents end. The real CLI and the simulator."""

import contextlib
import json
import os
import signal

import pytest
from test_crash import kill9, read_records, setup, start, tool_results, wait_for
from test_crash import run as crash_run
from test_crash import transcript as crash_transcript
from test_hooks_cli import sh
from test_memory import loopwright
from test_sdk_control import Host

from loopwright.stores.jsonl import project_name
from loopwright.testing import Simulator

REVIEWER = """---
name: reviewer
description: Reviews code for bugs
tools: Read, Bash
model: haiku
---
REVIEWER-PROMPT you look for bugs and report them.
"""


def agent_call(prompt, kind=None, tid=None):
    call = {"name": "Agent", "input": {"description": "look at it", "prompt": prompt,
                                        **({"subagent_type": kind} if kind else {})}}
    return {"tool_use": {**call, **({"id": tid} if tid else {})}}


def requests_for(sim, text):
    return [r for r in sim.message_requests if text in json.dumps(r.body["messages"][0])]


def test_a_subagent_runs_its_own_loop_and_its_answer_and_cost_come_back(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER)
    script = {"rules": [
        {"match": {"last_user_contains": "REVIEW-TASK"}, "responses": [
            {"tool_use": {"name": "Bash", "input": {"command": "echo inside"}},
             "usage": {"input_tokens": 1000, "output_tokens": 100}}]},
        {"match": {"last_user_contains": "inside"}, "responses": [{"text": "FOUND two bugs"}]},
        {"match": {"last_user_contains": "FOUND two bugs"}, "responses": [{"text": "the reviewer found two bugs"}]},
        {"responses": [agent_call("REVIEW-TASK check app.py", "reviewer")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "review my code", "--allowedTools", "Bash", "--output-format", "json"], home, project,
                         sim)
        child = requests_for(sim, "REVIEW-TASK")[0].body
        parent = [r.body for r in sim.message_requests if "review my code" in json.dumps(r.body["messages"])]
    result = json.loads(out.stdout)
    assert result["result"] == "the reviewer found two bugs", out.stderr
    system = child["system"] if isinstance(child["system"], str) else json.dumps(child["system"])
    assert "REVIEWER-PROMPT" in system and "started by another agent" in system
    assert {t["name"] for t in child["tools"]} == {"Read", "Bash"} and child["model"] == "claude-haiku-4-5"
    assert "review my code" not in json.dumps(child["messages"])  # a fresh context
    tool_result = parent[-1]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and tool_result["content"] == "FOUND two bugs"
    assert "claude-haiku-4-5" in result["modelUsage"] and result["usageByRole"]["subagents"]["inputTokens"] >= 1000
    assert result["total_cost_usd"] > result["usageByRole"]["subagents"]["costUSD"] > 0


def meet(me, other):
    """A command that marks `me` as running, waits (up to 10 s) for `other`, and says whether it came."""
    return {"tool_use": {"name": "Bash", "input": {"command": (
        f"touch {me}.on; for i in $(seq 100); do [ -e {other}.on ] && break; sleep 0.1; done; "
        f"[ -e {other}.on ] && echo {me}-MET-{other} || echo {me}-ALONE")}}}


def test_two_subagents_in_one_response_overlap(tmp_path):
    """Proved by order, not by the clock: each subagent's command starts, then sees the other's
    start before it ends; one after the other, the first would finish alone."""
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    script = {"rules": [
        {"match": {"last_user_contains": "-MET-"}, "responses": [{"text": "met", "repeat": 2}]},
        {"match": {"last_user_contains": "-ALONE"}, "responses": [{"text": "alone", "repeat": 2}]},
        {"match": {"last_user_contains": "TASK-A"}, "responses": [meet("A", "B")]},
        {"match": {"last_user_contains": "TASK-B"}, "responses": [meet("B", "A")]},
        {"match": {"last_user_contains": "met"}, "responses": [{"text": "both done"}]},
        {"responses": [{"content": [{"type": "tool_use", "name": "Agent", "id": "toolu_a",
                                     "input": {"description": "a", "prompt": "TASK-A"}},
                                    {"type": "tool_use", "name": "Agent", "id": "toolu_b",
                                     "input": {"description": "b", "prompt": "TASK-B"}}]}]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "do both", "--allowedTools", "Bash", "--output-format", "json"], home, project, sim)
        said = json.dumps([r.body["messages"][-1] for r in sim.message_requests])
    assert json.loads(out.stdout)["result"] == "both done", out.stderr
    assert "A-MET-B" in said and "B-MET-A" in said and "ALONE" not in said


def test_nesting_stops_three_levels_down(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    script = {"rules": [
        {"match": {"last_user_contains": "LEVEL3"}, "responses": [{"text": "L3 done"}]},
        {"match": {"last_user_contains": "LEVEL2"}, "responses": [agent_call("LEVEL3 task")]},
        {"match": {"last_user_contains": "LEVEL1"}, "responses": [agent_call("LEVEL2 task")]},
        {"match": {"last_user_contains": "L3 done"}, "responses": [{"text": "L2 done"}]},
        {"match": {"last_user_contains": "L2 done"}, "responses": [{"text": "L1 done"}]},
        {"match": {"last_user_contains": "L1 done"}, "responses": [{"text": "all done"}]},
        {"responses": [agent_call("LEVEL1 task")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "go deep", "--output-format", "json"], home, project, sim)
        levels = [requests_for(sim, f"LEVEL{n}")[0].body for n in (1, 2, 3)]
    assert json.loads(out.stdout)["result"] == "all done", out.stderr
    assert ["Agent" in {t["name"] for t in body["tools"]} for body in levels] == [True, True, False]


def test_a_definition_without_its_fields_is_one_warning_and_an_unknown_type_an_error(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    (project / ".claude" / "agents").mkdir(parents=True)
    bad = project / ".claude" / "agents" / "nameless.md"
    bad.write_text("---\ndescription: no name\n---\nbody\n")
    script = {"rules": [{"match": {"last_user_contains": "not found"}, "responses": [{"text": "ok"}]},
                        {"responses": [agent_call("x", "nameless")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "try", "--output-format", "json"], home, project, sim)
        last = sim.message_requests[-1].body["messages"][-1]["content"][0]
    warnings = [ln for ln in out.stderr.splitlines() if "agents:" in ln]
    assert len(warnings) == 1 and str(bad) in warnings[0] and "needs both `name` and `description`" in warnings[0]
    assert last["is_error"] and "Agent type 'nameless' not found" in last["content"]


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def hook(command, matcher=None):
    return {**({"matcher": matcher} if matcher else {}), "hooks": [{"type": "command", "command": command}]}


def test_subagent_start_and_stop_hooks_fire_with_claude_codes_inputs_and_a_block_continues_the_subagent(tmp_path):
    home, project, logs = tmp_path / "home", tmp_path / "proj", tmp_path / "logs"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER)
    logs.mkdir()
    context = json.dumps({"hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "START-CTX"}})
    settings = {"hooks": {
        "SubagentStart": [hook(sh("reply.sh", logs / "start", context), "reviewer"),
                          hook(sh("reply.sh", logs / "other-start"), "someone-else")],
        "SubagentStop": [hook(sh("reply.sh", logs / "stop"), "reviewer"),
                         hook(sh("stop_once.sh", logs / "stop-once", logs / "stop-state"))],
        "PreToolUse": [hook(sh("reply.sh", logs / "pre"), "Bash")],
        "Stop": [hook(sh("reply.sh", logs / "main-stop"))],
        "UserPromptSubmit": [hook(sh("reply.sh", logs / "prompt"))]}}
    script = {"rules": [
        {"match": {"last_user_contains": "Run the test suite"}, "responses": [{"text": "CHILD second answer"}]},
        {"match": {"last_user_contains": "inside"}, "responses": [{"text": "CHILD first answer"}]},
        {"match": {"last_user_contains": "REVIEW-TASK"}, "responses": [
            {"tool_use": {"name": "Bash", "input": {"command": "echo inside"}}}]},
        {"match": {"last_user_contains": "CHILD second answer"}, "responses": [{"text": "parent done"}]},
        {"responses": [agent_call("REVIEW-TASK check app.py", "reviewer")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "review my code", "--allowedTools", "Bash", "--output-format", "json",
                          "--settings", json.dumps(settings)], home, project, sim)
        child = requests_for(sim, "REVIEW-TASK")[0].body
    result = json.loads(out.stdout)
    assert result["result"] == "parent done", out.stderr
    main_transcript = home / ".lw" / "projects" / project_name(project) / f"{result['session_id']}.jsonl"
    [start] = read_jsonl(logs / "start")
    assert start["hook_event_name"] == "SubagentStart" and start["agent_type"] == "reviewer"
    assert start["session_id"] == result["session_id"] and start["transcript_path"] == str(main_transcript)
    assert start["cwd"] == str(project) and len(start["agent_id"]) == 17
    assert not (logs / "other-start").exists()  # matchers filter on the agent type
    assert "SubagentStart hook additional context: START-CTX" in json.dumps(child["messages"][0])
    stops = read_jsonl(logs / "stop")
    assert [s["stop_hook_active"] for s in stops] == [False, True]
    assert [s["last_assistant_message"] for s in stops] == ["CHILD first answer", "CHILD second answer"]
    assert {s["agent_id"] for s in stops} == {start["agent_id"]} and stops[0]["agent_type"] == "reviewer"
    assert stops[0]["transcript_path"] == str(main_transcript) and stops[0]["hook_event_name"] == "SubagentStop"
    sidechain = main_transcript.with_suffix("") / "subagents" / f"agent-{start['agent_id']}.jsonl"
    assert stops[0]["agent_transcript_path"] == str(sidechain) and "background_tasks" in stops[0]
    [pre] = read_jsonl(logs / "pre")  # tool hooks inside a subagent say which agent calls
    assert pre["agent_id"] == start["agent_id"] and pre["agent_type"] == "reviewer"
    [main_stop] = read_jsonl(logs / "main-stop")  # a subagent's end fires SubagentStop, not Stop
    assert "agent_id" not in main_stop and main_stop["last_assistant_message"] == "parent done"
    assert len(read_jsonl(logs / "prompt")) == 1  # the subagent's task is not a person's prompt
    rows = read_jsonl(sidechain)
    assert rows and all(r["isSidechain"] is True and r["agentId"] == start["agent_id"] for r in rows)
    assert all(r["sessionId"] == result["session_id"] for r in rows)
    assert "REVIEW-TASK" in json.dumps(rows[0]) and "Run the test suite" in sidechain.read_text()
    assert not any("isSidechain" in r for r in read_jsonl(main_transcript))


def test_a_subagent_stop_hook_that_always_blocks_is_capped_like_stop(tmp_path):
    home, project, logs = tmp_path / "home", tmp_path / "proj", tmp_path / "logs"
    project.mkdir()
    logs.mkdir()
    settings = {"hooks": {"SubagentStop": [hook(sh("stop_always.sh", logs / "stop"))]}}
    script = {"rules": [
        {"match": {"last_user_contains": "SUB-TASK"}, "responses": [{"text": "child answer"}]},
        {"match": {"last_user_contains": "keep going"}, "responses": [{"text": "child answer", "repeat": -1}]},
        {"match": {"last_user_contains": "child answer"}, "responses": [{"text": "parent done"}]},
        {"responses": [agent_call("SUB-TASK")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "go", "--output-format", "json", "--settings", json.dumps(settings)], home, project,
                         sim, env={"LOOPWRIGHT_STOP_HOOK_BLOCK_CAP": "2"})
        child_calls = len([r for r in sim.message_requests if "SUB-TASK" in json.dumps(r.body["messages"][0])])
    assert json.loads(out.stdout)["result"] == "parent done", out.stderr
    assert (logs / "stop").read_text().split() == ["false", "true", "true"] and child_calls == 3


TWO_AGENTS = {"content": [{"type": "tool_use", "name": "Agent", "id": "toolu_a",
                           "input": {"description": "a", "prompt": "TASK-A"}},
                          {"type": "tool_use", "name": "Agent", "id": "toolu_b",
                           "input": {"description": "b", "prompt": "TASK-B"}}]}


def sidechains(home, project, sid):
    folder = crash_transcript(home, project, sid).with_suffix("") / "subagents"
    return sorted(folder.glob("agent-*.jsonl"))


def finished_tools(path):
    """The tool_use ids the session's ledger records as finished (a line being written is skipped)."""
    ids = set()
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("type") == "tool_finished":
            ids.add(record.get("toolUseId"))
    return ids


@pytest.mark.parametrize("how", ["kill", "interrupt"])
def test_a_crash_or_interrupt_leaves_every_transcript_valid_and_resume_never_reruns_a_finished_subagent(tmp_path, how):
    project, home, sid = setup(tmp_path)
    script = {"rules": [
        {"match": {"last_user_contains": "TASK-A"}, "responses": [{"text": "A done"}]},
        {"match": {"last_user_contains": "TASK-B"}, "responses": [{"text": "B never", "delay": 30}]},
        {"responses": [TWO_AGENTS]}]}
    with Simulator(script) as sim:
        proc = start(["-p", "do both", "--session-id", sid, "--output-format", "json"], sim, project, home)
        # A has finished for the session once the parent's ledger says so (its tool_finished
        # record), not when A's own sidechain ends: a kill between the two is "outcome unknown".
        wait_for(lambda: requests_for(sim, "TASK-B") and "toolu_a" in finished_tools(crash_transcript(home, project, sid)))
        if how == "kill":
            kill9(proc)
        else:
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=30)
            assert json.loads(out)["terminal_reason"] == "aborted"
    files = sidechains(home, project, sid)
    assert len(files) == 2
    for path in [crash_transcript(home, project, sid), *files]:
        records, warnings = read_records(path)  # every line a whole JSON record
        assert records and not warnings
    finished = [p for p in files if "A done" in p.read_text()]
    assert len(finished) == 1 and "TASK-B" in next(p for p in files if p not in finished).read_text()

    with Simulator([{"text": "resumed and finished"}]) as sim:
        out = crash_run(["-p", "-r", sid, "carry on", "--output-format", "json"], sim, project, home)
        requests = sim.message_requests
    assert json.loads(out.stdout)["result"] == "resumed and finished", out.stderr
    assert len(requests) == 1  # no subagent ran again
    answers = tool_results(requests[0])
    assert answers["toolu_a"]["content"] == "A done" and not answers["toolu_a"].get("is_error")
    assert answers["toolu_b"]["is_error"]  # it was cut off: its outcome is said, it is not re-run


def test_a_kill_after_a_subagent_ends_but_before_its_parent_records_it_is_outcome_unknown_never_a_rerun(tmp_path):
    """The window between a subagent's own run_result and its parent's tool_finished, held open
    by a PostToolUse hook: the parent's ledger decides, as for any tool (an unknown outcome, said,
    not run again), and the subagent's sidechain is whole with its answer."""
    project, home, sid = setup(tmp_path)
    held = tmp_path / "post-hook.pid"
    settings = {"hooks": {"PostToolUse": [hook(f"echo $$ > {held}.tmp; mv {held}.tmp {held}; exec sleep 30",
                                               "Agent")]}}
    script = {"rules": [
        {"match": {"last_user_contains": "TASK-A"}, "responses": [{"text": "A done"}]},
        {"responses": [agent_call("TASK-A", tid="toolu_a")]}]}
    with Simulator(script) as sim:
        proc = start(["-p", "do it", "--session-id", sid, "--output-format", "json",
                      "--settings", json.dumps(settings)], sim, project, home)
        try:
            wait_for(held.exists)
            [side] = sidechains(home, project, sid)
            assert "run_result" in side.read_text()  # the subagent has ended...
            assert "toolu_a" not in finished_tools(crash_transcript(home, project, sid))  # ...its parent not yet
            kill9(proc)
        finally:
            if held.exists():
                with contextlib.suppress(ProcessLookupError):  # (it dies with loopwright: the lifeline)
                    os.kill(int(held.read_text()), signal.SIGKILL)
    for path in [crash_transcript(home, project, sid), side]:
        records, warnings = read_records(path)
        assert records and not warnings
    assert "A done" in side.read_text()

    with Simulator([{"text": "resumed"}]) as sim:
        out = crash_run(["-p", "-r", sid, "carry on", "--output-format", "json"], sim, project, home)
        requests = sim.message_requests
    assert json.loads(out.stdout)["result"] == "resumed", out.stderr
    assert len(requests) == 1  # the subagent did not run again
    answer = tool_results(requests[0])["toolu_a"]
    assert answer["is_error"] and "Outcome unknown" in answer["content"] and "not run again" in answer["content"]


def test_agents_flag_defines_subagents_that_win_a_name_clash(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER)
    (project / ".claude" / "agents" / "careful.md").write_text(
        "---\nname: careful\ndescription: no shell\ndisallowedTools: Bash, Write\n---\nCAREFUL-PROMPT\n")
    given = {"reviewer": {"description": "Reviews from the flag", "prompt": "FLAG-PROMPT review it",
                          "tools": ["Read", "Grep"], "model": "haiku"}}
    script = {"rules": [
        {"match": {"last_user_contains": "TASK-ONE"}, "responses": [{"text": "one done"}]},
        {"match": {"last_user_contains": "TASK-TWO"}, "responses": [{"text": "two done"}]},
        {"match": {"last_user_contains": "one done"}, "responses": [{"text": "all done"}]},
        {"responses": [{"content": [
            {"type": "tool_use", "name": "Agent", "id": "toolu_1",
             "input": {"description": "one", "prompt": "TASK-ONE", "subagent_type": "reviewer"}},
            {"type": "tool_use", "name": "Agent", "id": "toolu_2",
             "input": {"description": "two", "prompt": "TASK-TWO", "subagent_type": "careful"}}]}]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "go", "--output-format", "json", "--agents", json.dumps(given)], home, project, sim)
        [one], [two] = requests_for(sim, "TASK-ONE"), requests_for(sim, "TASK-TWO")
        listing = next(t["description"] for t in sim.message_requests[0].body["tools"] if t["name"] == "Agent")
    assert json.loads(out.stdout)["result"] == "all done", out.stderr
    assert "FLAG-PROMPT" in json.dumps(one.body["system"]) and "REVIEWER-PROMPT" not in json.dumps(one.body["system"])
    assert {t["name"] for t in one.body["tools"]} == {"Read", "Grep"} and one.body["model"] == "claude-haiku-4-5"
    names = {t["name"] for t in two.body["tools"]}
    assert "Read" in names and not names & {"Bash", "Write"}
    assert "- reviewer: Reviews from the flag (Tools: Read, Grep)" in listing
    assert "- careful: no shell (Tools: All tools except Bash, Write)" in listing


@pytest.mark.parametrize("given,expected", [
    ("{not json", "--agents: expected a JSON object of agent definitions"),
    ('{"x": {"description": "d"}}', "--agents: x.prompt: expected non-empty text"),
    ('{"x": {"description": "d", "prompt": "p", "tols": []}}', "--agents: x.tols: unknown field"),
    ('{"x": {"description": "d", "prompt": "p", "tools": 3}}', "--agents: x.tools: expected a list of tool names"),
])
def test_a_bad_agents_flag_is_one_error_line_naming_the_flag_and_key(tmp_path, given, expected):
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    with Simulator([]) as sim:
        out = loopwright(["-p", "go", "--agents", given], home, project, sim)
        assert sim.message_requests == []
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and expected in out.stderr, out.stderr


def test_init_lists_the_agents_and_text_mode_counts_the_defined_ones(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "reviewer.md").write_text(REVIEWER)
    (project / "CLAUDE.md").write_text("PROJECT-RULE\n")
    given = json.dumps({"flagged": {"description": "from the flag", "prompt": "p"}})
    with Simulator([{"text": "ok"}, {"text": "ok"}]) as sim:
        out = loopwright(["-p", "hi", "--output-format", "stream-json", "--verbose", "--agents", given], home,
                         project, sim)
        text = loopwright(["-p", "hi", "--agents", given], home, project, sim)
    init = json.loads(out.stdout.splitlines()[0])
    assert init["subtype"] == "init" and init["agents"] == ["general-purpose", "reviewer", "flagged"]
    assert "loopwright: loaded 1 memory file(s) and 2 subagent(s)" in text.stderr.splitlines(), text.stderr


def test_agents_the_sdk_sends_in_initialize_are_offered_and_a_bad_one_is_an_error_answer(tmp_path):
    script = {"rules": [
        {"match": {"last_user_contains": "SDK-TASK"}, "responses": [{"text": "helper done"}]},
        {"match": {"last_user_contains": "helper done"}, "responses": [{"text": "all done"}]},
        {"responses": [agent_call("SDK-TASK", "sdk-helper")]}]}
    agents = {"sdk-helper": {"description": "from the SDK", "prompt": "SDK-HELPER-PROMPT", "tools": ["Read"]}}
    with Simulator(script) as sim:
        host = Host(sim, tmp_path)
        host.send({"type": "control_request", "request_id": "bad", "request": {
            "subtype": "initialize", "hooks": None, "agents": {"broken": {"prompt": "p"}}}})
        [bad] = host.until(lambda f: f["type"] == "control_response")
        host.send({"type": "control_request", "request_id": "req_1", "request": {
            "subtype": "initialize", "hooks": None, "agents": agents}})
        [ok] = host.until(lambda f: f["type"] == "control_response")
        host.user("go")
        frames = host.until(lambda f: f["type"] == "result")
        assert host.finish() == 0
        [child] = requests_for(sim, "SDK-TASK")
    assert bad["response"]["subtype"] == "error" and "initialize: agents: broken.description" in bad["response"]["error"]
    assert ok["response"]["response"]["agents"] == ["general-purpose", "sdk-helper"]
    assert frames[0]["subtype"] == "init" and frames[0]["agents"] == ["general-purpose", "sdk-helper"]
    assert frames[-1]["result"] == "all done" and "SDK-HELPER-PROMPT" in json.dumps(child.body["system"])
    assert {t["name"] for t in child.body["tools"]} == {"Read"}


def test_a_goal_is_judged_only_after_the_subagents_of_the_turn_have_ended(tmp_path):
    """Subagents run inside the Agent tool call, so no stop of the launching agent (the only place
    a goal is judged) comes while one runs; a subagent's own stop is never judged."""
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    judge = "You decide whether an agent has met its goal"
    script = {"rules": [
        {"match": {"system_contains": judge}, "responses": [{"text": '{"ok": true, "reason": "it is done"}'}]},
        {"match": {"last_user_contains": "SUB-GOAL-TASK"}, "responses": [{"text": "sub finished"}]},
        {"match": {"last_user_contains": "sub finished"}, "responses": [{"text": "parent finished"}]},
        {"responses": [agent_call("SUB-GOAL-TASK")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "--goal", "the sub-task is done", "--output-format", "json"], home, project, sim)
        kinds = ["judge" if judge in json.dumps(r.body.get("system")) else
                 "child" if "started by another agent" in json.dumps(r.body.get("system")) else "parent"
                 for r in sim.message_requests]
    result = json.loads(out.stdout)
    assert result["result"] == "parent finished" and result["subtype"] == "success", out.stderr
    assert kinds == ["parent", "child", "parent", "judge"]


def test_a_subagents_hook_events_and_warnings_reach_the_launching_agents_output(tmp_path):
    home, project, logs = tmp_path / "home", tmp_path / "proj", tmp_path / "logs"
    project.mkdir()
    logs.mkdir()
    settings = {"hooks": {"SubagentStart": [hook("true")],
                          "SubagentStop": [hook(sh("reply.sh", logs / "stop", "", 1, "SUB-HOOK-WARNING"))]}}
    script = {"rules": [{"match": {"last_user_contains": "SUB-TASK"}, "responses": [{"text": "sub answer"}]},
                        {"match": {"last_user_contains": "sub answer"}, "responses": [{"text": "done"}]},
                        {"responses": [agent_call("SUB-TASK")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "go", "--output-format", "stream-json", "--verbose", "--include-hook-events",
                          "--settings", json.dumps(settings)], home, project, sim)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[-1]["result"] == "done", out.stderr
    started = [d["hook_event"] for d in lines if d.get("subtype") == "hook_started"]
    assert started == ["SubagentStart", "SubagentStop"]
    assert any("SUB-HOOK-WARNING" in d.get("content", "") for d in lines if d.get("level") == "warning")


def _repo(project):
    import subprocess

    project.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=project, check=True)


def test_an_isolated_subagent_works_in_its_own_worktree_and_its_changes_stay_on_a_branch(tmp_path):
    import subprocess

    home, project = tmp_path / "home", tmp_path / "proj"
    _repo(project)
    (project / "draft.txt").write_text("the user's uncommitted draft\n")
    call = agent_call("ISO-TASK write the file")
    call["tool_use"]["input"]["isolation"] = "worktree"
    script = {"rules": [
        {"match": {"last_user_contains": "ISO-TASK"}, "responses": [
            {"tool_use": {"name": "Bash", "input": {"command": "cat draft.txt | tee seen.txt; echo new > made.txt"}}}]},
        {"match": {"last_user_contains": "draft"}, "responses": [{"text": "MADE it"}]},
        {"match": {"last_user_contains": "MADE it"}, "responses": [{"text": "done"}]},
        {"responses": [call]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "make a file", "--allowedTools", "Bash", "--output-format", "json"], home, project, sim,
                         env={"TMPDIR": str(tmp_path)})
        answer = sim.message_requests[-1].body["messages"][-1]["content"][0]["content"]
    assert json.loads(out.stdout)["result"] == "done", (out.stderr, answer)
    assert not (project / "made.txt").exists()  # never applied to the parent's files
    branch = answer.split("committed on branch ")[1].split()[0]
    assert answer.startswith("MADE it") and branch.startswith("loopwright/agent-a")
    shown = subprocess.run(["git", "show", f"{branch}:seen.txt"], cwd=project, capture_output=True, text=True)
    assert shown.stdout == "the user's uncommitted draft\n"  # it started from the working tree as it was
    # one id names the subagent everywhere: its branch, its worktree and its sidechain transcript
    sidechains = [p.name for p in home.rglob("subagents/agent-*.jsonl")]
    assert sidechains == [f"{branch.split('/')[1]}.jsonl"]


def test_an_isolated_subagent_that_changes_nothing_leaves_no_worktree_or_branch(tmp_path):
    import subprocess

    home, project = tmp_path / "home", tmp_path / "proj"
    _repo(project)
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "looker.md").write_text(
        "---\nname: looker\ndescription: Looks\nisolation: worktree\n---\nLook only.\n")
    script = {"rules": [{"match": {"last_user_contains": "LOOK-TASK"}, "responses": [{"text": "nothing to change"}]},
                        {"match": {"last_user_contains": "nothing to change"}, "responses": [{"text": "ok"}]},
                        {"responses": [agent_call("LOOK-TASK look", "looker")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "look", "--output-format", "json"], home, project, sim, env={"TMPDIR": str(tmp_path)})
        answer = sim.message_requests[-1].body["messages"][-1]["content"][0]["content"]
    assert json.loads(out.stdout)["result"] == "ok" and answer == "nothing to change"
    git = ["git", "-C", str(project)]
    assert subprocess.run([*git, "branch", "--list", "loopwright/*"], capture_output=True, text=True).stdout == ""
    assert subprocess.run([*git, "worktree", "list"], capture_output=True, text=True).stdout.count("\n") == 1


def test_isolation_outside_a_git_repository_is_the_tools_error(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    call = agent_call("ISO-TASK")
    call["tool_use"]["input"]["isolation"] = "worktree"
    with Simulator([call, {"text": "could not"}]) as sim:
        out = loopwright(["-p", "go", "--output-format", "json"], home, project, sim)
        answer = sim.message_requests[-1].body["messages"][-1]["content"][0]
    assert json.loads(out.stdout)["result"] == "could not"
    assert answer["is_error"] and "isolation: worktree needs a git repository" in answer["content"]


def test_a_subagents_task_that_starts_with_a_slash_is_never_a_custom_command(tmp_path):
    """The model writes the task: `/deploy` must not expand the project's command (and its grants)."""
    home, project = tmp_path / "home", tmp_path / "proj"
    (project / ".claude" / "commands").mkdir(parents=True)
    marker = tmp_path / "deployed"
    (project / ".claude" / "commands" / "deploy.md").write_text(
        f"---\nallowed-tools: Bash(touch:*)\n---\n!`touch {marker}`\nDEPLOY-BODY\n")
    script = {"rules": [{"match": {"last_user_contains": "/deploy now"}, "responses": [{"text": "not deploying"}]},
                        {"match": {"last_user_contains": "not deploying"}, "responses": [{"text": "ok"}]},
                        {"responses": [agent_call("/deploy now")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "go", "--output-format", "json"], home, project, sim)
        sent = json.dumps([r.body["messages"] for r in sim.message_requests])
    assert json.loads(out.stdout)["result"] == "ok", out.stderr
    assert "DEPLOY-BODY" not in sent and not marker.exists()
