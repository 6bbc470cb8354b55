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
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


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

    with Simulator(rules()) as sim:
        out = loopwright(["workflow", "run", "--resume", sid, "--output-format", "json"], home, project, sim)
        prompts = [json.dumps(r.body["messages"]) for r in sim.message_requests]
    result = json.loads(out.stdout)
    assert result["result"] == "reviewed-alpha | reviewed-beta | reviewed-gamma", out.stderr
    assert len(prompts) == 3 and all("REVIEW" in p and "DRAFT" not in p for p in prompts)  # no draft ran again
    assert result["workflow"]["agents"] == 6 and result["workflow"]["replayed"] == 3
    assert result["usageByRole"]["subagents"]["inputTokens"] > 0 and result["total_cost_usd"] > 0


def test_progress_is_stream_json_workflow_status_and_the_answer_is_the_result(tmp_path):
    home, project = world(tmp_path, six=SIX)
    with Simulator(rules()) as sim:
        out = loopwright(["-p", "/six alpha beta", "--output-format", "stream-json"], home, project, sim)
        assert len(sim.message_requests) == 4
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    status = [x for x in lines if x["type"] == "system" and x["subtype"] == "workflow_status"]
    assert status[0]["phase"] == "running" and status[-1]["phase"] == "done" and status[-1]["done"] == 4
    assert max(s["running"] for s in status) >= 1
    assert any(s.get("message") == "all reviewed" for s in status)
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "reviewed-alpha | reviewed-beta", out.stderr
