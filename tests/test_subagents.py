"""Subagents (issue 10 item 3): the `Agent` tool hands a sub-task to an agent loop of its own —
its own request (the definition's prompt, the tools it names, its model), a fresh context — and
its final answer comes back as the tool result; what it spent counts as the parent's; several
calls in one response run at the same time; nesting stops three levels down; a definition
without its required fields is one warning naming the file. The real CLI and the simulator."""

import json

from test_memory import loopwright

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


def test_two_subagents_in_one_response_overlap(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir()
    script = {"rules": [
        {"match": {"last_user_contains": "TASK-A"}, "responses": [{"text": "A done", "delay": 0.5}]},
        {"match": {"last_user_contains": "TASK-B"}, "responses": [{"text": "B done", "delay": 0.5}]},
        {"match": {"last_user_contains": "A done"}, "responses": [{"text": "both done"}]},
        {"responses": [{"content": [{"type": "tool_use", "name": "Agent", "id": "toolu_a",
                                     "input": {"description": "a", "prompt": "TASK-A"}},
                                    {"type": "tool_use", "name": "Agent", "id": "toolu_b",
                                     "input": {"description": "b", "prompt": "TASK-B"}}]}]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "do both", "--output-format", "json"], home, project, sim)
        [a] = requests_for(sim, "TASK-A")
        [b] = requests_for(sim, "TASK-B")
    assert json.loads(out.stdout)["result"] == "both done", out.stderr
    assert a.time < b.finished and b.time < a.finished  # each started before the other was answered


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
