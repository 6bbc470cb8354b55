"""Every tool call of a durable loop is a recorded step, whatever offers the tool: an MCP
server's tool, a skill's shell step (the Skill tool), a subagent (the Agent tool) or a
model-written workflow (the Workflow tool), with the tool calls of their agents inside them. A
lone SQLite-backed worker is killed with kill -9 after such a call finished, while the model's
next answer is awaited; the next worker recovers the loop, and the call's side effect (a line the
test MCP server or the skill's shell step appends to a file) is there once."""

import json
import signal
import sys
from pathlib import Path

import pytest

from loopwright.sandbox.bwrap import availability
from loopwright.testing import Simulator
from procs import gone
from test_workers import all_done, cli, env, no_worker_left, start_worker, stop, wait_for  # noqa: F401  (fixtures)

TOOLBOX = Path(__file__).parent / "mcpservers" / "toolbox.py"
needs_bwrap = pytest.mark.skipif(availability() is not None, reason=f"no sandbox here: {availability()}")


def toolbox(log):
    return json.dumps({"mcpServers": {"tb": {"command": sys.executable, "args": [str(TOOLBOX)],
                                             "env": {"TOOLBOX_LOG": str(log)}}}})


def record(note):
    return {"tool_use": {"name": "mcp__tb__record", "input": {"note": note}}, "repeat": -1}


def said(sim, text):
    """The model was asked with `text` in the request (a tool's result it was given)."""
    return any(text in json.dumps(r.body) for r in sim.message_requests)


def lines(log):
    return log.read_text().splitlines() if log.exists() else []


def kill_and_recover(sim, store, env, project, log, tmp_path, finished):
    """A worker takes the loop; once `finished` holds (the call's result went to the model, whose
    answer is slow), it is killed; a second worker recovers the loop and finishes it."""
    with open(tmp_path / "worker.log", "w") as out:
        first = start_worker(store, env, project, out)
        wait_for(finished, 90, "the tool call to finish")
        assert not all_done(store, 1)
        first.send_signal(signal.SIGKILL)
        assert gone(first.pid, 10)
        again = start_worker(store, env, project, out)
        try:
            wait_for(lambda: all_done(store, 1), 120, "the loop after the restart")
        finally:
            stop(again)
    text = (tmp_path / "worker.log").read_text()
    assert "is gone; 1 of its loops taken over" in text, text


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.mark.timeout(300)
def test_a_finished_mcp_tool_call_is_not_run_again_after_a_kill(project, env, tmp_path):
    store, log = f"sqlite:///{tmp_path / 'dbos.sqlite'}", tmp_path / "toolbox.log"
    rules = [{"match": {"last_user_contains": "recorded M0"}, "responses": [{"text": "done M0", "delay": 4.0,
                                                                           "repeat": -1}]},
             {"match": {"last_user_contains": "go M0."}, "responses": [record("M0")]}]
    with Simulator({"rules": rules}) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        cli(["enqueue", "--store", store, "go M0.", "--mcp-config", toolbox(log), "--allowedTools", "mcp__tb__record",
             "--max-turns", "4"], env, project)
        kill_and_recover(sim, store, env, project, log, tmp_path, lambda: said(sim, "recorded M0"))
    assert lines(log) == ["M0"]
    assert not sim.unmatched


@pytest.mark.timeout(300)
@pytest.mark.parametrize("started_by", ["model", "prompt"])
def test_a_finished_skill_call_is_not_run_again_after_a_kill(project, env, tmp_path, started_by):
    """The skill's shell step (a line in a file) runs as the skill loads: when the model calls the
    Skill tool, or before the loop when the prompt is `/stamp`."""
    store, log = f"sqlite:///{tmp_path / 'dbos.sqlite'}", project / "stamps"
    (project / ".claude" / "skills" / "stamp").mkdir(parents=True)
    (project / ".claude" / "skills" / "stamp" / "SKILL.md").write_text(
        "---\nname: stamp\ndescription: leave a stamp\n---\nSTAMPED !`echo K0 >> stamps; echo once`\n")
    rules = [{"match": {"last_user_contains": "STAMPED once"}, "responses": [{"text": "done K0", "delay": 4.0,
                                                                            "repeat": -1}]},
             {"match": {"last_user_contains": "go K0."}, "responses": [
                 {"tool_use": {"name": "Skill", "input": {"skill": "stamp"}}, "repeat": -1}]}]
    with Simulator({"rules": rules}) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        prompt = "go K0." if started_by == "model" else "/stamp"
        cli(["enqueue", "--store", store, prompt, "--allowedTools", "Skill,Bash", "--max-turns", "4"], env, project)
        kill_and_recover(sim, store, env, project, log, tmp_path, lambda: said(sim, "STAMPED once"))
    assert lines(log) == ["K0"]
    assert not sim.unmatched


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_finished_subagent_is_not_run_again_after_a_kill(project, env, tmp_path, request, kind):
    """The subagent calls the MCP tool; the Agent call is one step: neither the subagent nor its
    tool call runs again, its model requests are not made again, and its own transcript (a
    sidechain of the session, in the store) is kept as the first worker wrote it."""
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}" if kind == "sqlite" else request.getfixturevalue("pg_db")
    log = tmp_path / "toolbox.log"
    agent_call = {"tool_use": {"name": "Agent", "input": {"description": "record a note", "prompt": "sub S0."}},
                  "repeat": -1}
    rules = [{"match": {"last_user_contains": "sub done S0"}, "responses": [{"text": "done S0", "delay": 4.0,
                                                                           "repeat": -1}]},
             {"match": {"last_user_contains": "recorded S0"}, "responses": [{"text": "sub done S0", "repeat": -1}]},
             {"match": {"last_user_contains": "sub S0."}, "responses": [record("S0")]},
             {"match": {"last_user_contains": "go S0."}, "responses": [agent_call]}]
    with Simulator({"rules": rules}) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        out = cli(["enqueue", "--store", store, "go S0.", "--mcp-config", toolbox(log), "--allowedTools",
                   "Agent,mcp__tb__record", "--max-turns", "4"], env, project)
        kill_and_recover(sim, store, env, project, log, tmp_path, lambda: said(sim, "sub done S0"))
        asked_sub = [r for r in sim.message_requests if "sub S0." in json.dumps(r.body["messages"][:1])]
    assert lines(log) == ["S0"]
    assert len(asked_sub) == 2  # the subagent's two model calls, each made once
    assert not sim.unmatched
    if kind == "postgresql":
        import psycopg

        session_id = out.split()[-1]
        with psycopg.connect(store) as db:
            (chain,), = db.execute("SELECT DISTINCT chain FROM loopwright.records WHERE session_id = %s AND "
                                   "chain <> ''", (session_id,)).fetchall()
        side = cli(["session", "export", session_id, "--agent", chain, "--store", store], env, project)
        assert "sub S0." in side and "sub done S0" in side


@needs_bwrap
@pytest.mark.timeout(300)
def test_a_finished_model_written_workflow_is_not_run_again_after_a_kill(project, env, tmp_path):
    """The Workflow tool's call is one step: its agent (which calls the MCP tool) is not run again."""
    store, log = f"sqlite:///{tmp_path / 'dbos.sqlite'}", tmp_path / "toolbox.log"
    script = 'async def main(wf, args):\n    return await wf.agent("sub W0.")\n'
    workflow_call = {"tool_use": {"name": "Workflow", "input": {"script": script}}, "repeat": -1}
    rules = [{"match": {"last_user_contains": "workflow: 1 agent(s)"}, "responses": [{"text": "done W0", "delay": 4.0,
                                                                                     "repeat": -1}]},
             {"match": {"last_user_contains": "recorded W0"}, "responses": [{"text": "sub done W0", "repeat": -1}]},
             {"match": {"last_user_contains": "sub W0."}, "responses": [record("W0")]},
             {"match": {"last_user_contains": "go W0."}, "responses": [workflow_call]}]
    with Simulator({"rules": rules}) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        cli(["enqueue", "--store", store, "go W0.", "--mcp-config", toolbox(log), "--allowedTools",
             "Workflow,mcp__tb__record", "--max-turns", "4"], env, project)
        kill_and_recover(sim, store, env, project, log, tmp_path, lambda: said(sim, "workflow: 1 agent(s)"))
    assert lines(log) == ["W0"]
    assert not sim.unmatched


@pytest.mark.timeout(300)
def test_subagents_started_together_run_together_and_each_keeps_its_own_record(project, env, tmp_path):
    """Two Agent calls in one response run at the same time on a worker too (their steps are drawn
    in the calls' order as the calls start, not as they happen to finish); after the recovery each
    call is answered from its own record."""
    store, log = f"sqlite:///{tmp_path / 'dbos.sqlite'}", tmp_path / "toolbox.log"
    calls = [{"name": "Agent", "input": {"description": f"record {x}", "prompt": f"sub {x}0."}} for x in "AB"]
    rules = [{"match": {"last_user_contains": "sub done"}, "responses": [{"text": "done P0", "delay": 4.0,
                                                                        "repeat": -1}]}]
    for x in "AB":
        rules += [{"match": {"last_user_contains": f"recorded {x}0"}, "responses": [
                      {"text": f"sub done {x}0", "delay": 1.0, "repeat": -1}]},
                  {"match": {"last_user_contains": f"sub {x}0."}, "responses": [record(f"{x}0")]}]
    rules.append({"match": {"last_user_contains": "go P0."}, "responses": [{"tool_use": calls, "repeat": -1}]})

    def both_answered():
        return any("sub done A0" in (text := json.dumps(r.body)) and "sub done B0" in text
                   for r in sim.message_requests)

    with Simulator({"rules": rules}) as sim:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        cli(["enqueue", "--store", store, "go P0.", "--mcp-config", toolbox(log), "--allowedTools",
             "Agent,mcp__tb__record", "--max-turns", "4"], env, project)
        kill_and_recover(sim, store, env, project, log, tmp_path, both_answered)
        last = sim.message_requests[-1].body["messages"]
        assert sim.peak_in_flight >= 2  # the two subagents' slow answers were awaited at once
    assert sorted(lines(log)) == ["A0", "B0"]
    prompts = {b["id"]: b["input"]["prompt"] for b in last[-2]["content"] if b["type"] == "tool_use"}
    answers = {b["tool_use_id"]: json.dumps(b["content"]) for b in last[-1]["content"] if b["type"] == "tool_result"}
    assert {prompts[i]: "sub done " + prompts[i][4:6] in answers[i] for i in prompts} == {"sub A0.": True,
                                                                                           "sub B0.": True}
    assert not sim.unmatched
