"""The `Workflow` tool end to end: the model writes a workflow script, loopwright runs it in a
process of its own under bubblewrap, and the script reaches the world only through `wf.agent`
(ordinary subagents under the session's rules). What the script tries itself — reading a file,
writing one, opening a socket — fails inside its sandbox."""

import json

import pytest

from test_memory import loopwright

from loopwright.sandbox.bwrap import availability
from loopwright.testing import Simulator

needs_bwrap = pytest.mark.skipif(availability() is not None, reason=f"no sandbox here: {availability()}")

FAN_OUT = '''
async def main(wf, args):
    wf.phase("asking")
    a, b = await wf.parallel(wf.agent("TOPIC-ONE summarise"), wf.agent("TOPIC-TWO summarise"))
    return await wf.pipeline(a + " + " + b, lambda text: text.upper())
'''


def workflow_call(script, args=None):
    return {"tool_use": {"name": "Workflow", "input": {"script": script, **({"args": args} if args else {})}}}


def run(tmp_path, script, extra_rules=(), env=None):
    home, project = tmp_path / "home", tmp_path / "proj"
    project.mkdir(exist_ok=True)
    rules = [*extra_rules, {"match": {"last_user_contains": "TOPIC-ONE"}, "responses": [{"text": "one"}]},
             {"match": {"last_user_contains": "TOPIC-TWO"}, "responses": [{"text": "two"}]},
             {"responses": [workflow_call(script), {"text": "done"}]}]
    with Simulator({"rules": rules}) as sim:
        out = loopwright(["-p", "go", "--output-format", "json"], home, project, sim, env=env)
        last = sim.message_requests[-1].body["messages"][-1]["content"][0]
        count = len(sim.message_requests)
    return json.loads(out.stdout), last, count


@needs_bwrap
def test_a_model_written_workflow_runs_its_agents_and_only_its_answer_comes_back(tmp_path):
    result, answer, count = run(tmp_path, FAN_OUT)
    assert result["result"] == "done" and not answer.get("is_error"), answer
    assert answer["content"].startswith("ONE + TWO") and "(workflow: 2 agent(s)" in answer["content"]
    assert count == 4  # the workflow call, two agents, the last word
    assert result["usageByRole"]["subagents"]["inputTokens"] > 0


@needs_bwrap
@pytest.mark.parametrize("attempt, seen", [
    ("open('{readme}').read()", "FileNotFoundError"),
    ("open('/escape.txt', 'w').write('x')", "Read-only file system"),
    ("__import__('socket').create_connection(('127.0.0.1', {port}), 2)", "ConnectionRefusedError"),
    ("__import__('subprocess').run(['cat', '{readme}'], capture_output=True, text=True).stderr", "No such file"),
])
def test_what_the_script_tries_itself_fails_inside_its_sandbox(tmp_path, attempt, seen):
    readme = tmp_path / "proj" / "README.md"
    readme.parent.mkdir()
    readme.write_text("secret project text\n")
    with Simulator([{"text": "unused"}]) as outside:  # a real port listening on the host's loopback
        port = outside.base_url.rsplit(":", 1)[1]
        script = f"async def main(wf, args):\n    return repr({attempt.format(readme=readme, port=port)})\n"
        result, answer, _ = run(tmp_path, script)
        assert not outside.message_requests
    assert seen in answer["content"], answer
    assert "secret project text" not in json.dumps(answer) and not (tmp_path / "escape.txt").exists()


def test_without_the_sandbox_a_model_written_workflow_is_refused_with_the_reason(tmp_path):
    result, answer, count = run(tmp_path, FAN_OUT, env={"LOOPWRIGHT_BWRAP": str(tmp_path / "no-bwrap")})
    assert answer.get("is_error") and "runs only under the OS sandbox" in answer["content"]
    assert "bwrap" in answer["content"] and count == 2  # no agent ran


@needs_bwrap
def test_a_workflow_past_its_time_limit_is_stopped(tmp_path):
    script = "import asyncio\nasync def main(wf, args):\n    await asyncio.sleep(60)\n"
    result, answer, _ = run(tmp_path, script, env={"LOOPWRIGHT_WORKFLOW_TIME_LIMIT": "1"})
    assert answer.get("is_error") and "longer than 1 s" in answer["content"]


@needs_bwrap
def test_a_script_without_main_or_with_an_error_is_the_tools_error(tmp_path):
    _, answer, _ = run(tmp_path, "async def main(wf, args):\n    return 1 / 0\n")
    assert answer.get("is_error") and "ZeroDivisionError" in answer["content"]
