"""Workflows (issue 12 item 1): a user's async Python script orchestrating subagents through `wf`
(`agent`, `parallel`, `pipeline`, `workflow`, `log`, `budget`, `now`, `random`), each agent a full
subagent loop; every finished agent a line of the journal beside the transcript, so a workflow
killed with SIGKILL resumes and runs only the agents that had not finished; a budget that runs
out stops it cleanly; a script that calls differently on replay is a clear error; `workflow
list`; a bad file is one error line naming it. The real CLI and the simulator."""

import json
import os
import subprocess
import sys
import textwrap

from test_crash import kill9, transcript, wait_for
from test_memory import loopwright

from loopwright.testing import Simulator

SIX = '''
"""Three topics, each drafted then reviewed: six agents."""


async def main(wf, args):
    wf.phase("drafting and reviewing")

    async def draft(topic):
        return await wf.agent(f"DRAFT {topic}")

    async def review(text):
        return await wf.agent(f"REVIEW {text}")

    done = await wf.parallel(*(wf.pipeline(topic, draft, review) for topic in args))
    wf.log("all reviewed")
    return " | ".join(done)
'''


def world(tmp_path, **scripts):
    home, project = tmp_path / "home", tmp_path / "proj"
    folder = project / ".loopwright" / "workflows"
    folder.mkdir(parents=True)
    home.mkdir()
    for name, text in scripts.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text))
    return home, project


def start(args, home, project, sim):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".lw"), ANTHROPIC_API_KEY="k",
               ANTHROPIC_BASE_URL=sim.base_url)
    return subprocess.Popen([sys.executable, "-m", "loopwright", *args], env=env, cwd=project,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def journal(home, project, sid):
    path = transcript(home / ".lw", project, sid).with_suffix("") / "workflow.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")] if path.is_file() else []


def steps(home, project, sid):
    return [r for r in journal(home, project, sid) if r["type"] == "step"]


def rules(review_delay=0):
    out = []
    for topic in ("alpha", "beta", "gamma"):
        out.append({"match": {"last_user_contains": f"REVIEW draft-{topic}"},
                    "responses": [{"text": f"reviewed-{topic}", **({"delay": review_delay} if review_delay else {})}]})
        out.append({"match": {"last_user_contains": f"DRAFT {topic}"}, "responses": [{"text": f"draft-{topic}"}]})
    return {"rules": out}


def test_a_workflow_killed_after_three_agents_resumes_and_runs_only_the_other_three(tmp_path):
    home, project = world(tmp_path, six=SIX)
    sid = "6f1a0c1e-0000-4000-8000-000000000006"
    with Simulator(rules(review_delay=30)) as sim:
        proc = start(["workflow", "run", "six", "alpha", "beta", "gamma", "--session-id", sid], home, project, sim)
        wait_for(lambda: len(steps(home, project, sid)) == 3 and len(sim.message_requests) == 6)
        kill9(proc)
    recorded = steps(home, project, sid)
    assert sorted(r["text"] for r in recorded) == ["draft-alpha", "draft-beta", "draft-gamma"]
    assert all(r["kind"] == "agent" and len(r["hash"]) == 32 for r in recorded)
    path = transcript(home / ".lw", project, sid).with_suffix("") / "workflow.jsonl"
    with path.open("a") as f:
        f.write('{"type": "step", "key": "0.0/1", "te')  # a line cut off by a crash: skipped on replay

    with Simulator(rules()) as sim:
        out = loopwright(["workflow", "run", "--resume", sid, "--output-format", "json"], home, project, sim)
        prompts = [json.dumps(r.body["messages"]) for r in sim.message_requests]
    result = json.loads(out.stdout)
    assert result["result"] == "reviewed-alpha | reviewed-beta | reviewed-gamma", out.stderr
    assert len(prompts) == 3 and all("REVIEW" in p and "DRAFT" not in p for p in prompts)  # no draft ran again
    assert result["workflow"]["agents"] == 6 and result["workflow"]["replayed"] == 3
    assert len(steps(home, project, sid)) == 6  # the reviews were journaled after the cut line
    assert result["usageByRole"]["subagents"]["inputTokens"] > 0 and result["total_cost_usd"] > 0


def test_progress_is_stream_json_workflow_status_and_the_answer_is_the_result(tmp_path):
    home, project = world(tmp_path, six=SIX)
    with Simulator(rules()) as sim:
        out = loopwright(["-p", "/six alpha beta", "--output-format", "stream-json"], home, project, sim)
        assert len(sim.message_requests) == 4
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0]["type"] == "system" and lines[0]["subtype"] == "init"
    status = [x for x in lines if x["type"] == "system" and x["subtype"] == "workflow_status"]
    assert status[0]["phase"] == "running" and status[-1]["phase"] == "done" and status[-1]["done"] == 4
    assert max(s["running"] for s in status) >= 1
    assert any(s.get("message") == "all reviewed" for s in status)
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "reviewed-alpha | reviewed-beta", out.stderr


SPENDER = '''
async def main(wf, args):
    for i in range(5):
        wf.log(f"left: ${wf.budget:.2f}")
        await wf.agent(f"STEP {i}")
    return "all five ran"
'''


def test_a_workflow_whose_budget_runs_out_stops_cleanly_with_a_clear_result(tmp_path):
    home, project = world(tmp_path, spender=SPENDER)
    script = [{"text": "a costly answer", "usage": {"input_tokens": 1_000_000, "output_tokens": 10}, "repeat": 5}]
    with Simulator(script) as sim:
        out = loopwright(["workflow", "run", "spender", "--max-budget-usd", "1", "--output-format", "json"], home,
                         project, sim)
        assert len(sim.message_requests) == 1  # no agent starts once the budget is gone
    result = json.loads(out.stdout)
    assert out.returncode == 1 and result["subtype"] == "error_max_budget_usd", out.stderr
    assert result["terminal_reason"] == "budget_exhausted" and result["total_cost_usd"] > 1
    assert "the workflow's budget ($1.0000) is spent" in result["errors"][0] and "--resume" in result["errors"][0]
    assert result["usageByRole"]["subagents"]["inputTokens"] == 1_000_000
    assert result["workflow"]["agents"] == 1


def test_text_mode_shows_progress_lines_and_the_answer(tmp_path):
    home, project = world(tmp_path, spender=SPENDER)
    with Simulator([{"text": "fine", "repeat": 5}]) as sim:
        out = loopwright(["workflow", "run", "spender"], home, project, sim)
    assert out.returncode == 0 and out.stdout == "all five ran\n", out.stderr
    lines = out.stderr.splitlines()
    assert "loopwright: workflow spender [running] 0 running, 0 done, $0.0000" in lines
    assert "loopwright: workflow spender [running] 1 running, 0 done, $0.0000" in lines
    assert any(line.startswith("loopwright: workflow spender [done] 0 running, 5 done, $") for line in lines)
    assert "left: $inf" in out.stderr


DRIFTING = '''
import pathlib


async def main(wf, args):
    pick = wf.random()
    first = await wf.agent(pathlib.Path("topic.txt").read_text() + f" {pick}")
    if pathlib.Path("stop").exists():
        raise RuntimeError("stopped on purpose")
    return first + " then " + await wf.agent(f"SECOND {wf.now() > 0}")
'''


def test_a_resume_replays_random_numbers_and_a_changed_call_is_a_clear_error(tmp_path):
    home, project = world(tmp_path, drifting=DRIFTING)
    (project / "topic.txt").write_text("TOPIC-ONE")
    (project / "stop").write_text("")
    sid = "6f1a0c1e-0000-4000-8000-00000000000d"
    with Simulator([{"text": "one"}]) as sim:
        out = loopwright(["workflow", "run", "drifting", "--session-id", sid, "--output-format", "json"], home,
                         project, sim)
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "workflow_failed" and out.returncode == 1
    assert "RuntimeError: stopped on purpose" in result["errors"][0] and "drifting.py:9" in result["errors"][0]

    (project / "stop").unlink()
    with Simulator([{"text": "two"}]) as sim:  # the same topic: the first agent and the random number replay
        out = loopwright(["workflow", "run", "--resume", sid, "--output-format", "json"], home, project, sim)
        assert len(sim.message_requests) == 1 and "SECOND True" in json.dumps(sim.message_requests[0].body)
    assert json.loads(out.stdout)["result"] == "one then two", out.stderr

    (project / "topic.txt").write_text("TOPIC-TWO")
    with Simulator([]) as sim:
        out = loopwright(["workflow", "run", "--resume", sid, "--output-format", "json"], home, project, sim)
        assert sim.message_requests == []
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "not_deterministic" and out.returncode == 1
    error = result["errors"][0]
    assert error.startswith("the workflow is not deterministic between steps: step 1 was recorded as "
                            "wf.agent('TOPIC-ONE 0.") and "is now wf.agent('TOPIC-TWO 0." in error


def test_workflow_list_names_each_workflow_its_place_and_its_first_doc_line(tmp_path):
    home, project = world(tmp_path, six=SIX, broken="def main(:\n", plain="async def helper():\n    pass\n")
    mine = home / ".loopwright" / "workflows"
    mine.mkdir(parents=True)
    (mine / "mine.py").write_text('"""My own: for every project."""\nasync def main(wf, args):\n    return 1\n')
    (mine / "six.py").write_text('"""Shadowed by the project\'s."""\nasync def main(wf, args):\n    return 1\n')
    with Simulator([]) as sim:
        out = loopwright(["workflow", "list"], home, project, sim)
        as_json = json.loads(loopwright(["workflow", "list", "--json"], home, project, sim).stdout)
    folder = project / ".loopwright" / "workflows"
    assert out.returncode == 0 and out.stdout.splitlines() == [
        f"broken  project  (cannot be used: syntax error at line 1)  ({folder / 'broken.py'})",
        f"mine    user     My own: for every project.  ({mine / 'mine.py'})",
        f"plain   project  (cannot be used: no `async def main(wf, args)`)  ({folder / 'plain.py'})",
        f"six     project  Three topics, each drafted then reviewed: six agents.  ({folder / 'six.py'})"]
    assert [w["name"] for w in as_json] == ["broken", "mine", "plain", "six"] and as_json[1]["scope"] == "user"


def test_a_bad_workflow_file_is_one_error_line_naming_the_file(tmp_path):
    home, project = world(tmp_path, broken="async def main(wf, args)\n    return 1\n",
                          plain="async def helper():\n    pass\n", sync="def main(wf, args):\n    return 1\n",
                          boom="raise ValueError('no config')\n")
    folder = project / ".loopwright" / "workflows"
    expected = {"broken": f"workflow {folder / 'broken.py'}: syntax error at line 1: expected ':'",
                "plain": f"workflow {folder / 'plain.py'}: no `main`; expected `async def main(wf, args)`",
                "sync": f"workflow {folder / 'sync.py'}: `main` is not an async function; expected "
                        "`async def main(wf, args)`",
                "boom": f"workflow {folder / 'boom.py'}: failed while loading: ValueError: no config",
                "nothing": "workflow 'nothing' not found (workflows: boom, broken, plain, sync; see `loopwright "
                           "workflow list`)"}
    with Simulator([]) as sim:
        for name, line in expected.items():
            out = loopwright(["workflow", "run", name], home, project, sim)
            assert out.returncode == 2 and out.stderr == f"loopwright: error: {line}\n", out.stderr
        assert sim.message_requests == []


OUTER = '''
async def main(wf, args):
    inner = await wf.workflow("inner", ["x", "y"])
    graded = await wf.agent("GRADE it", schema={"type": "object", "properties": {"score": {"type": "integer"}},
                                                "required": ["score"]})
    return {"inner": inner, "graded": graded}
'''
INNER = '''
async def main(wf, args):
    return [await wf.agent(f"INNER {a}") for a in args]
'''
DEEPER = '''
async def main(wf, args):
    return await wf.workflow("outer", args)
'''


def test_a_workflow_nests_one_level_and_a_schema_gives_the_agents_structured_answer(tmp_path):
    home, project = world(tmp_path, outer=OUTER, inner=INNER, deeper=DEEPER)
    script = {"rules": [
        {"match": {"last_user_contains": "INNER x"}, "responses": [{"text": "ix"}]},
        {"match": {"last_user_contains": "INNER y"}, "responses": [{"text": "iy"}]},
        {"match": {"last_user_contains": "GRADE it"},
         "responses": [{"tool_use": {"name": "StructuredOutput", "input": {"score": 7}}}]},
        {"responses": [{"text": "graded"}]}]}
    with Simulator(script) as sim:
        out = loopwright(["workflow", "run", "outer", "--output-format", "json"], home, project, sim)
        grade = next(r.body for r in sim.message_requests if "GRADE it" in json.dumps(r.body["messages"]))
    result = json.loads(out.stdout)
    assert result["structured_output"] == {"inner": ["ix", "iy"], "graded": {"score": 7}}, out.stderr
    assert json.loads(result["result"]) == result["structured_output"]
    assert "StructuredOutput" in [t["name"] for t in grade["tools"]]
    with Simulator([]) as sim:
        out = loopwright(["workflow", "run", "deeper", "--output-format", "json"], home, project, sim)
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "workflow_failed" and "workflows nest one level only, and 'outer' is " \
        "already nested" in result["errors"][0]


WIDE = '''
async def main(wf, args):
    answers = await wf.parallel(*(wf.agent(f"PART {i}", tools=["Read"]) for i in range(20)))
    return str(len(answers))
'''


def test_at_most_sixteen_agents_run_at_once(tmp_path):
    home, project = world(tmp_path, wide=WIDE)
    with Simulator([{"text": "part done", "delay": 0.3, "repeat": 20}]) as sim:
        out = loopwright(["-p", "/wide", "--output-format", "stream-json"], home, project, sim)
        tools = {tuple(t["name"] for t in r.body["tools"]) for r in sim.message_requests}
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    running = [x["running"] for x in lines if x.get("subtype") == "workflow_status"]
    assert max(running) == 16 and lines[-1]["result"] == "20", out.stderr
    assert tools == {("Read",)}  # `tools` narrows each agent's tools


def test_an_agent_asking_for_an_unknown_tool_fails_the_workflow_naming_it(tmp_path):
    home, project = world(tmp_path, odd="async def main(wf, args):\n    return await wf.agent('go', tools=['Raed'])\n")
    with Simulator([]) as sim:
        out = loopwright(["workflow", "run", "odd", "--output-format", "json"], home, project, sim)
        assert sim.message_requests == []
    error = json.loads(out.stdout)["errors"][0]
    assert error.startswith("workflow 'odd' failed") and "agent step 0 ('go') stopped before it finished: unknown " \
        "tool(s) Raed; expected names from " in error and "Read" in error


def test_an_interrupted_workflow_ends_as_aborted_and_resumes(tmp_path):
    import signal

    home, project = world(tmp_path, six=SIX)
    sid = "6f1a0c1e-0000-4000-8000-0000000000a1"
    with Simulator(rules(review_delay=30)) as sim:
        proc = start(["workflow", "run", "six", "alpha", "--session-id", sid, "--output-format", "json"], home,
                     project, sim)
        wait_for(lambda: len(steps(home, project, sid)) == 1 and len(sim.message_requests) == 2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    result = json.loads(out)
    assert proc.returncode == 130 and result["terminal_reason"] == "aborted", err
    assert result["errors"] == [f"the workflow was interrupted; resume with --resume {sid}"]
    sidechains = sorted((transcript(home / ".lw", project, sid).with_suffix("") / "subagents").glob("*.jsonl"))
    assert len(sidechains) == 2 and all("run_result" in p.read_text() for p in sidechains)  # each ended whole
    assert result["workflow"]["agents"] == 1 and result["total_cost_usd"] > 0
    with Simulator(rules()) as sim:
        out = loopwright(["-p", "/six alpha", "--resume", sid, "--output-format", "json"], home, project, sim)
        assert len(sim.message_requests) == 1
    assert json.loads(out.stdout)["result"] == "reviewed-alpha", out.stderr

    with Simulator([{"text": "it was reviewed"}]) as sim:  # only the calls and the answers are in the conversation
        out = loopwright(["-p", "what came of it?", "--resume", sid], home, project, sim)
        [request] = sim.message_requests
    assert out.returncode == 0 and out.stdout == "it was reviewed\n", out.stderr
    said = json.dumps(request.body["messages"])
    assert "/six alpha (resumed)" in said and "reviewed-alpha" in said and "draft-alpha" not in said
    with Simulator([]) as sim:
        listed = loopwright(["sessions", "--json"], home, project, sim)
    assert [row["id"] for row in json.loads(listed.stdout)] == [sid], listed.stderr


def test_a_workflow_can_start_in_a_conversation_and_its_answer_joins_it(tmp_path):
    home, project = world(tmp_path, six=SIX)
    sid = "6f1a0c1e-0000-4000-8000-0000000000c0"
    with Simulator([{"text": "hello there"}]) as sim:
        assert loopwright(["-p", "hi", "--session-id", sid], home, project, sim).returncode == 0
    with Simulator(rules()) as sim:
        out = loopwright(["-p", "/six beta", "--resume", sid], home, project, sim)
    assert out.stdout == "reviewed-beta\n", out.stderr
    with Simulator([{"text": "noted"}]) as sim:
        loopwright(["-p", "and?", "--resume", sid], home, project, sim)
        said = json.dumps(sim.message_requests[0].body["messages"])
    assert said.index("hello there") < said.index("/six beta") < said.index("reviewed-beta") < said.index("and?")
    with Simulator(rules()) as sim:  # another workflow after a finished one: it starts afresh, the old journal kept
        out = loopwright(["-p", "/six gamma", "--resume", sid], home, project, sim)
        assert len(sim.message_requests) == 2
    assert out.stdout == "reviewed-gamma\n", out.stderr
    folder = transcript(home / ".lw", project, sid).with_suffix("")
    assert "draft-beta" in (folder / "workflow-1.jsonl").read_text() and [r["text"] for r in steps(
        home, project, sid)] == ["draft-gamma", "reviewed-gamma"]
    with Simulator([]) as sim:
        out = loopwright(["workflow", "run", "--resume", "6f1a0c1e-0000-4000-8000-0000000000c1"], home, project, sim)
    assert out.returncode == 1 and "No conversation found" in out.stderr
    plain = "6f1a0c1e-0000-4000-8000-0000000000c2"
    with Simulator([{"text": "hello"}]) as sim:
        loopwright(["-p", "hi", "--session-id", plain], home, project, sim)
        out = loopwright(["workflow", "run", "--resume", plain], home, project, sim)
    assert out.returncode == 2 and out.stderr == (f"loopwright: error: --resume {plain}: that session ran no "
                                                  "workflow; name the one to run\n")


def test_an_agent_stopped_by_what_is_left_of_the_budget_stops_the_workflow(tmp_path):
    home, project = world(tmp_path, spender=SPENDER)
    costly = {"usage": {"input_tokens": 1_000_000}}
    script = [{"tool_use": {"name": "Read", "input": {"file_path": "x"}}, **costly}, {"text": "never", **costly}]
    with Simulator(script) as sim:
        out = loopwright(["workflow", "run", "spender", "--max-budget-usd", "1"], home, project, sim)
        assert len(sim.message_requests) == 1  # the agent's own bound stopped it before its second call
    assert out.returncode == 1 and out.stdout.startswith("Error: the workflow's budget ($1.0000) ran out during "
                                                         "step 0"), out.stderr
    assert "loopwright: workflow spender [budget spent] 0 running, 0 done, $" in out.stderr


PAIR = '''
async def main(wf, args):
    return await wf.parallel(wf.agent("COSTLY one"), wf.agent("SLOW one"))
'''


def test_when_one_agent_spends_the_budget_the_others_running_are_stopped(tmp_path):
    home, project = world(tmp_path, pair=PAIR)
    script = {"rules": [
        {"match": {"last_user_contains": "SLOW one"}, "responses": [{"text": "too late", "delay": 120}]},
        {"match": {"last_user_contains": "COSTLY one"},
         "responses": [{"text": "dear", "usage": {"input_tokens": 1_000_000}}]}]}
    with Simulator(script) as sim:  # the slow one would outlast the command's 60 s if it were not stopped
        out = loopwright(["workflow", "run", "pair", "--max-budget-usd", "1", "--output-format", "json"], home,
                         project, sim)
        assert len(sim.message_requests) == 2
    result = json.loads(out.stdout)
    assert result["subtype"] == "error_max_budget_usd" and result["workflow"]["agents"] == 1, out.stderr
