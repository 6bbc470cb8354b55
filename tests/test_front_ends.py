"""Every front end composes its run through `compose.build` (issue 33 item 4): `-p`, the
interactive terminal, `/loop`, the Agent SDK's stream-json channel, parallel attempts and routine items, each the
real CLI in a subprocess against the simulator. What only `build()` does is observed in each: the skills are
bound to the session it opened, so a skill's `${CLAUDE_SESSION_ID}` names the session the run
reports (an agent built by hand renders the id of a session that never existed)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from procs import kill_mid_tool
from test_interactive import Terminal

from loopwright.testing import Simulator

SKILL = "---\ndescription: says which session this is\n---\nThis is session ${CLAUDE_SESSION_ID}.\n"
USE_IT = [{"tool_use": {"name": "Skill", "input": {"skill": "whoami"}}}, {"text": "done"}]
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


@pytest.fixture
def work(tmp_path):
    """A project with the skill, and a home of its own."""
    folder = tmp_path / "work"
    (folder / ".claude" / "skills" / "whoami").mkdir(parents=True)
    (folder / ".claude" / "skills" / "whoami" / "SKILL.md").write_text(SKILL)
    (tmp_path / "home").mkdir()
    return folder


def environment(tmp_path, sim):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=sim.base_url, HOME=str(tmp_path / "home"),
               LOOPWRIGHT_HOME=str(tmp_path / "home" / ".loopwright"))
    return env


def loopwright(tmp_path, sim, *args, stdin=""):
    done = subprocess.run([sys.executable, "-m", "loopwright", *args], input=stdin, capture_output=True, text=True,
                          env=environment(tmp_path, sim), cwd=tmp_path / "work", timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def rendered(sim):
    """The session ids the skill's body named, each as it reached the model (in the message that
    answered the Skill call)."""
    return [found for r in sim.message_requests
            for found in re.findall(f"This is session ({UUID})", json.dumps(r.body["messages"][-1]))]


def test_print_mode_names_its_own_session(tmp_path, work):
    with Simulator(USE_IT) as sim:
        result = json.loads(loopwright(tmp_path, sim, "-p", "who are you", "--output-format", "json"))
        assert rendered(sim) == [result["session_id"]]


def test_a_loop_names_its_own_session(tmp_path, work):
    with Simulator(USE_IT) as sim:
        result = json.loads(loopwright(tmp_path, sim, "-p", "/loop who are you", "--max-iterations", "1",
                                       "--output-format", "json"))
        assert result["loop"]["iterations"] == 1 and rendered(sim) == [result["session_id"]]


def test_the_agent_sdk_channel_names_its_own_session(tmp_path, work):
    line = {"type": "user", "session_id": "", "message": {"role": "user", "content": "who are you"},
            "parent_tool_use_id": None}
    with Simulator(USE_IT) as sim:
        out = loopwright(tmp_path, sim, "--input-format", "stream-json", "--output-format", "stream-json",
                         "--verbose", stdin=json.dumps(line) + "\n")
        [result] = [f for f in map(json.loads, out.splitlines()) if f.get("type") == "result"]
        assert result["result"] == "done" and rendered(sim) == [result["session_id"]]


def test_the_terminal_names_its_session_and_after_clear_the_new_one(tmp_path, work):
    """The terminal's own session, and after `/clear` the new one's (the room rebinds the skills)."""
    with Simulator(USE_IT + USE_IT) as sim:
        t = Terminal(tmp_path, sim, cwd=work, env={"HOME": str(tmp_path / "home"),
                                                   "LOOPWRIGHT_HOME": str(tmp_path / "home" / ".loopwright")})
        try:
            first = re.search(f"session ({UUID})", t.expect("/help for commands.").seen).group(1)
            t.send("who are you").expect("done")
            t.send("/clear").expect("new conversation · session ")
            second = re.search(f"new conversation · session ({UUID})", t.expect("\n").seen).group(1)
            t.send("and now").expect("done")
            t.send("/exit")
            assert t.close() == 0
        finally:
            t.proc.kill()
        assert first != second and rendered(sim) == [first, second]


def test_each_parallel_attempt_names_its_own_session(tmp_path, work):
    """Each attempt's run is composed in its worktree, its skills bound to its own session."""
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=work, check=True,
                       capture_output=True)
    judge = {"system_contains": "reviewer of several independent attempts"}
    verdict = {"attempts": [{"label": "A", "defects": [], "verdict": "acceptable"}], "winner": "A", "reasons": "ok"}
    with Simulator({"rules": [{"match": judge, "responses": [{"text": json.dumps(verdict), "repeat": -1}]},
                              {"responses": USE_IT}]}) as sim:
        result = json.loads(loopwright(tmp_path, sim, "-p", "who are you", "--attempts", "1", "--output-format",
                                       "json"))
        [row] = result["attempts"]["attempts"]
        assert rendered(sim) == [row["session_id"]]


def test_a_routine_item_names_its_own_session_and_again_when_resumed(tmp_path, work):
    """A routine item's run, new and then carried on by the next fire after its process was
    killed mid-tool: both times the skill names the item's session (a resumed item's agent built
    by hand named a random one)."""
    (work / ".loopwright" / "routines").mkdir(parents=True)
    (work / ".loopwright" / "routines" / "ids.yaml").write_text(
        "source: {command: cat items.jsonl}\nprompt: \"Handle {id}\"\nallowed_tools: [Bash]\nsandbox: false\n")
    (work / "items.jsonl").write_text('{"id": "i1"}\n')
    slow = {"tool_use": {"name": "Bash", "input": {"command": "echo $$ > tool.pid; sleep 30"}}}
    with Simulator([USE_IT[0], slow]) as sim:
        kill_mid_tool(["routine", "run", "ids", "--once"], work, environment(tmp_path, sim), work / "tool.pid")
        new = rendered(sim)
    with Simulator(USE_IT) as sim:
        out = loopwright(tmp_path, sim, "routine", "run", "ids", "--once")
        resumed = rendered(sim)
    assert "1 done" in out
    [row] = json.loads(loopwright(tmp_path, sim, "routine", "items", "ids", "--json"))
    assert row["status"] == "done" and new == [row["session_id"]] and resumed == [row["session_id"]]
