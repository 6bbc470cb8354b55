"""Workflows beyond the project's and the user's folders (issue 12): a plugin's `workflows/`
named `PLUGIN:NAME` as its commands are, listed and run like any other; the real CLI and the
simulator, with a plugin of our own in Claude Code's layout."""

import json
import textwrap

from test_memory import loopwright
from test_workflows import world

from loopwright.testing import Simulator

REVIEW = '''
"""Draft, then have the plugin's helper workflow review it."""


async def main(wf, args):
    draft = await wf.agent(f"DRAFT {' '.join(args)}")
    return await wf.workflow("revue:second", draft)
'''

SECOND = '''
"""A second look."""


async def main(wf, args):
    return await wf.agent(f"REVIEW {args}")
'''


def revue_plugin(root):
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "revue", "version": "1.0.0"}))
    (root / "workflows").mkdir()
    (root / "workflows" / "review.py").write_text(textwrap.dedent(REVIEW))
    (root / "workflows" / "second.py").write_text(textwrap.dedent(SECOND))
    return root


RULES = {"rules": [
    {"match": {"last_user_contains": "REVIEW draft"}, "responses": [{"text": "looks right", "repeat": -1}]},
    {"match": {"last_user_contains": "DRAFT"}, "responses": [{"text": "draft one", "repeat": -1}]}]}


def test_a_plugins_workflows_are_listed_namespaced_and_run(tmp_path):
    home, project = world(tmp_path)
    root = revue_plugin(tmp_path / "plugs" / "revue")
    with Simulator(RULES) as sim:
        listed = loopwright(["workflow", "list", "--plugin-dir", str(root)], home, project, sim)
        as_json = json.loads(loopwright(["workflow", "list", "--json", "--plugin-dir", str(root)],
                                        home, project, sim).stdout)
        without = loopwright(["workflow", "list"], home, project, sim)
        by_prompt = loopwright(["-p", "/revue:review the plan", "--plugin-dir", str(root)], home, project, sim)
        by_command = loopwright(["workflow", "run", "revue:review", "the", "plan", "--plugin-dir", str(root),
                                 "--output-format", "json"], home, project, sim)
        sent = [r.body["messages"][-1]["content"] for r in sim.message_requests]
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        f"revue:review  plugin   Draft, then have the plugin's helper workflow review it.  "
        f"({root / 'workflows' / 'review.py'})",
        f"revue:second  plugin   A second look.  ({root / 'workflows' / 'second.py'})"]
    assert [w["name"] for w in as_json] == ["revue:review", "revue:second"] and as_json[0]["scope"] == "plugin"
    assert without.stdout == "" and "no workflows" in without.stderr
    assert by_prompt.returncode == 0 and by_prompt.stdout == "looks right\n", by_prompt.stderr
    result = json.loads(by_command.stdout)
    assert result["result"] == "looks right" and result["workflow"]["agents"] == 2, by_command.stderr
    assert len(sent) == 4 and "DRAFT the plan" in json.dumps(sent[0]) and "REVIEW draft one" in json.dumps(sent[1])


def test_an_installed_plugins_workflow_runs_when_settings_switch_it_on(tmp_path):
    home, project = world(tmp_path)
    root = revue_plugin(home / ".claude" / "plugins" / "cache" / "mkt" / "revue" / "1.0.0")
    (home / ".claude" / "plugins" / "installed_plugins.json").write_text(json.dumps(
        {"version": 2, "plugins": {"revue@mkt": [{"scope": "user", "installPath": str(root)}]}}))
    settings = home / ".claude" / "settings.json"
    settings.write_text(json.dumps({"enabledPlugins": {"revue@mkt": True}}))
    with Simulator(RULES) as sim:
        on = loopwright(["-p", "/revue:review it"], home, project, sim)
        settings.write_text(json.dumps({"enabledPlugins": {"revue@mkt": False}}))
        off = loopwright(["-p", "/revue:review it"], home, project, sim)
        listed = loopwright(["workflow", "list"], home, project, sim)
    assert on.returncode == 0 and on.stdout == "looks right\n", on.stderr
    assert off.returncode != 0 and "Unknown command: /revue:review" in off.stderr
    assert "revue" not in listed.stdout


def test_slash_name_runs_a_workflow_in_the_interactive_session_and_only_its_answer_joins(tmp_path):
    from test_interactive import Terminal

    folder = tmp_path / ".loopwright" / "workflows"
    folder.mkdir(parents=True)
    (folder / "draft.py").write_text(textwrap.dedent('''
        async def main(wf, args):
            wf.log("drafting")
            return await wf.agent(f"DRAFT {' '.join(args)}")
    '''))
    (tmp_path / "CLAUDE.md").write_text("PROJECT-RULE\n")
    root = revue_plugin(tmp_path / "plugs" / "revue")
    rules = {"rules": [*RULES["rules"], {"match": {"last_user_contains": "and now?"},
                                         "responses": [{"text": "noted both", "repeat": -1}]}]}
    with Simulator(rules) as sim:
        t = Terminal(tmp_path, sim, ("--plugin-dir", str(root)))
        try:
            t.expect("› ").send("/draft the plan").expect("workflow draft [running]").expect("drafting")
            t.expect("draft one").expect("› ").send("/revue:review it").expect("looks right").expect("› ")
            t.send("and now?").expect("noted both").expect("› ").send("/exit")
            assert t.close() == 0
        finally:
            t.proc.kill()
        last = sim.message_requests[-1].body["messages"]
    said = json.dumps(last)
    assert "PROJECT-RULE" in said  # the conversation opened as a first prompt opens it
    assert said.index("/draft the plan") < said.index("draft one") < said.index("/revue:review it") < said.index(
        "looks right") < said.index("and now?")
    assert "DRAFT the plan" not in said and "REVIEW draft" not in said  # the agents' work stays theirs


TRIAGE = '''
"""Triage one item of a routine."""


async def main(wf, args):
    item = wf.item
    first = await wf.agent(f"LOOK {item['id']}: {item['title']} (severity {item['severity']}); goal: {wf.goal}")
    second = await wf.agent(f"DECIDE {wf.routine} {' '.join(args)} after {first}")
    return f"{item['id']} triaged: {second}"
'''


def test_a_routine_item_runs_a_workflow_that_reads_the_item_and_the_goal(tmp_path):
    from test_routines import cli, items, project

    root = project(tmp_path, "triage", "source: {command: cat items.jsonl}\nworkflow: triage\n"
                                       "goal: \"{title} is understood\"\nsandbox: false\n")
    (root / ".loopwright" / "workflows").mkdir()
    (root / ".loopwright" / "workflows" / "triage.py").write_text(textwrap.dedent(TRIAGE))
    (root / "items.jsonl").write_text('{"id": "b7", "title": "crash on start", "severity": 2}\n')
    rules = {"rules": [{"match": {"last_user_contains": "LOOK"}, "responses": [{"text": "looked"}]},
                       {"match": {"last_user_contains": "DECIDE"}, "responses": [{"text": "minor"}]}]}
    with Simulator(rules) as sim:
        out = cli(["routine", "run", "triage", "--once"], tmp_path, sim)
        sent = [json.dumps(r.body["messages"][-1]["content"]) for r in sim.message_requests]
    assert out.returncode == 0, out.stderr
    assert len(sent) == 2
    assert "LOOK b7: crash on start (severity 2); goal: crash on start is understood" in sent[0]
    assert "DECIDE triage crash on start is understood after looked" in sent[1]
    done = items(tmp_path, "triage")["b7"]
    assert done["status"] == "done" and "b7 triaged: minor" in json.dumps(done), done


def test_outside_a_routine_the_item_and_goal_are_none(tmp_path):
    home, project = world(tmp_path, peek="async def main(wf, args):\n    return f'{wf.item} {wf.goal} {wf.routine}'\n")
    with Simulator([]) as sim:
        out = loopwright(["-p", "/peek"], home, project, sim)
    assert out.returncode == 0 and out.stdout == "None None None\n", out.stderr


def test_a_routine_workflow_key_is_checked(tmp_path):
    from test_routines import cli, project

    for text, said in [
        ("workflow: 'no good'\n", "workflow: expected a workflow's name such as triage"),
        ("workflow: t\nskill: s\n", "workflow: expected one of `workflow:`, `skill:` or `attempts:`"),
        ("workflow: t\ncheck: 'true'\n", "check: expected a `goal:` (checks and protected paths belong to a goal)"),
    ]:
        body = text if "goal:" in text else text + "prompt: p\n"
        project(tmp_path, "bad", "source: {command: cat items.jsonl}\n" + body)
        out = cli(["routine", "run", "bad", "--once"], tmp_path)
        assert out.returncode == 2 and said in out.stderr, out.stderr


def work_then_review(root):
    """A `fix` workflow of two agents (WORK the item, then REVIEW it) and a protected test file."""
    (root / ".loopwright" / "workflows").mkdir()
    (root / ".loopwright" / "workflows" / "fix.py").write_text(textwrap.dedent('''
        async def main(wf, args):
            first = await wf.agent(f"WORK {wf.item['id']}")
            return await wf.agent(f"REVIEW {wf.item['id']} after {first}")
    '''))
    (root / "tests").mkdir()
    (root / "tests" / "keep.txt").write_text("the real test\n")


def test_a_routine_workflows_answer_is_held_to_the_items_checks_and_protected_files(tmp_path):
    from test_routines import cli, items, project

    root = project(tmp_path, "fix", "source: {command: cat items.jsonl}\nworkflow: fix\ngoal: \"{id} is fixed\"\n"
                                    "check: grep -q good answer.txt\nprotect: tests/**\nallowed_tools: [Bash, Write]\n"
                                    "permission_mode: acceptEdits\nsandbox: false\n")
    work_then_review(root)
    (root / "items.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in ("g1", "b1", "p1")))

    def write(path, content):
        return {"name": "Write", "input": {"file_path": path, "content": content}}

    sneak = {"name": "Bash", "input": {"command": "python3 -c \"open('tests/keep.txt', 'w').write('weakened')\""}}
    rules = {"rules": [
        {"match": {"last_user_contains": "WORK g1"}, "responses": [{"tool_use": write("answer.txt", "good\n")}]},
        {"match": {"last_user_contains": "WORK b1"}, "responses": [{"tool_use": write("answer.txt", "bad\n")}]},
        # the reviewer tries to weaken the protected test: the Write is refused; a write the gate cannot
        # see (inside python) gets through, and the harness's comparison catches it
        {"match": {"last_user_contains": "REVIEW p1"}, "responses": [
            {"tool_use": [write("tests/keep.txt", "weakened"), sneak]}]},
        {"match": {"last_user_contains": "WORK p1"}, "responses": [{"tool_use": write("answer.txt", "good\n")}]},
        {"responses": [{"text": "finished", "repeat": -1}]}]}
    with Simulator(rules) as sim:
        out = cli(["routine", "run", "fix", "--once"], tmp_path, sim)
        results = [b for r in sim.message_requests for m in r.body["messages"] if isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result"]
    assert out.returncode in (0, 1), out.stderr
    done = items(tmp_path, "fix")
    assert done["g1"]["status"] == "done", done["g1"]
    assert done["b1"]["status"] == "failed" and "its checks failed: grep -q good answer.txt (exit 1)" in json.dumps(
        done["b1"]), done["b1"]
    assert done["p1"]["status"] == "failed", done["p1"]
    assert "protected files changed: tests/keep.txt (protected: tests/**)" in json.dumps(done["p1"]), done["p1"]
    denied = [r for r in results if r.get("is_error")]  # the reviewer's Write, refused by the gate
    assert len(denied) == 1 and "Permission denied for Write: the deny rule Edit(./tests/**)" in denied[0]["content"]
    assert (root / "tests" / "keep.txt").read_text() == "weakened"  # the workflow's doing, reported, not undone


def test_a_resumed_routine_workflow_still_counts_protected_changes_made_before_its_process_died(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from test_routines import cli, env_for, items, project

    root = project(tmp_path, "fix", "source: {command: cat items.jsonl}\nworkflow: fix\ngoal: \"{id} is fixed\"\n"
                                    "protect: tests/**\nallowed_tools: [Bash]\nsandbox: false\n")
    work_then_review(root)
    (root / "items.jsonl").write_text('{"id": "k1"}\n')
    sneak = {"name": "Bash", "input": {"command": "python3 -c \"open('tests/keep.txt', 'w').write('weakened')\""}}
    slow = {"rules": [{"match": {"last_user_contains": "WORK k1"}, "responses": [{"tool_use": sneak}]},
                      {"match": {"last_user_contains": "REVIEW k1"}, "responses": [{"text": "late", "delay": 60}]},
                      {"responses": [{"text": "worked", "repeat": -1}]}]}
    with Simulator(slow) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "routine", "run", "fix", "--once"], cwd=root,
                                env=env_for(tmp_path, sim), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not any("REVIEW k1" in json.dumps(r.body["messages"][-1]) for r in sim.message_requests):
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
    assert (root / "tests" / "keep.txt").read_text() == "weakened"
    with Simulator({"rules": [{"responses": [{"text": "reviewed", "repeat": -1}]}]}) as sim:
        again = cli(["routine", "run", "fix", "--once"], tmp_path, sim)
        sent = [json.dumps(r.body["messages"][-1]) for r in sim.message_requests]
    assert again.returncode in (0, 1), again.stderr
    assert len(sent) == 1 and "REVIEW k1 after worked" in sent[0]  # the finished agent was replayed
    done = items(tmp_path, "fix")["k1"]
    assert done["status"] == "failed" and "protected files changed: tests/keep.txt" in json.dumps(done), done


def test_a_routine_workflow_is_not_sent_to_workers(tmp_path):
    from test_routines import cli, project

    project(tmp_path, "fix", "source: {command: cat items.jsonl}\nworkflow: fix\nprompt: \"{id}\"\n")
    out = cli(["routine", "run", "fix", "--once", "--queue", "q"], tmp_path)
    assert out.returncode == 2 and "--queue: the items of routine 'fix' run the workflow 'fix', and workers do not run" in out.stderr, out.stderr


def test_a_routine_items_workflow_killed_mid_run_replays_its_finished_agent_at_the_next_fire(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from test_routines import cli, env_for, items, project

    root = project(tmp_path, "triage", "source: {command: cat items.jsonl}\nworkflow: triage\n"
                                       "prompt: \"look at {id}\"\nsandbox: false\n")
    (root / ".loopwright" / "workflows").mkdir()
    (root / ".loopwright" / "workflows" / "triage.py").write_text(textwrap.dedent(TRIAGE))
    (root / "items.jsonl").write_text('{"id": "k1", "title": "slow one", "severity": 1}\n')
    slow = {"rules": [{"match": {"last_user_contains": "LOOK"}, "responses": [{"text": "looked"}]},
                      {"match": {"last_user_contains": "DECIDE"}, "responses": [{"text": "late", "delay": 60}]}]}
    with Simulator(slow) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "routine", "run", "triage", "--once"], cwd=root,
                                env=env_for(tmp_path, sim), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(sim.message_requests) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
    rules = {"rules": [{"match": {"last_user_contains": "DECIDE"}, "responses": [{"text": "minor"}]}]}
    with Simulator(rules) as sim:
        again = cli(["routine", "run", "triage", "--once"], tmp_path, sim)
        sent = [json.dumps(r.body["messages"][-1]["content"]) for r in sim.message_requests]
    assert again.returncode == 0, again.stderr
    assert len(sent) == 1 and "DECIDE triage look at k1 after looked" in sent[0]  # LOOK was not asked again
    done = items(tmp_path, "triage")["k1"]
    assert done["status"] == "done" and "k1 triaged: minor" in json.dumps(done), done


def test_ctrl_c_stops_a_workflow_in_the_interactive_session_and_the_session_goes_on(tmp_path):
    import signal
    import time

    from test_interactive import Terminal

    folder = tmp_path / ".loopwright" / "workflows"
    folder.mkdir(parents=True)
    (folder / "slow.py").write_text("async def main(wf, args):\n    return await wf.agent('SLOW step')\n")
    rules = {"rules": [{"match": {"last_user_contains": "SLOW"}, "responses": [{"text": "late", "delay": 60}]},
                       {"match": {"last_user_contains": "still"}, "responses": [{"text": "still here"}]}]}
    with Simulator(rules) as sim:
        t = Terminal(tmp_path, sim)
        try:
            t.expect("› ").send("/slow")
            deadline = time.monotonic() + 30
            while not sim.message_requests and time.monotonic() < deadline:
                time.sleep(0.05)
            t.proc.send_signal(signal.SIGINT)
            t.expect("Interrupted by you").expect("› ").send("still there?").expect("still here").expect("› ").send("/exit")
            assert t.close() == 0
        finally:
            t.proc.kill()


def test_slash_name_in_stream_json_input_runs_the_workflow_with_its_progress_and_the_session_goes_on(tmp_path):
    import os
    import subprocess
    import sys

    from test_workflows import SIX, rules

    home, project = world(tmp_path, six=SIX, broken="def main(:\n")
    script = rules()
    script["rules"] += [{"match": {"last_user_contains": "and now?"}, "responses": [{"text": "noted", "repeat": -1}]},
                        {"match": {"last_user_contains": "/six as text"}, "responses": [{"text": "just text"}]}]
    stdin = "".join(json.dumps({"type": "user", "message": {"role": "user", "content": text}, **extra}) + "\n"
                    for text, extra in [("/six alpha beta", {}), ("/broken", {}), ("/six as text", {"client_composed": True}),
                                        ("and now?", {})])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".lw"), ANTHROPIC_API_KEY="k")
    with Simulator(script) as sim:
        out = subprocess.run([sys.executable, "-m", "loopwright", "-p", "--input-format", "stream-json",
                              "--output-format", "stream-json", "--verbose"], input=stdin, capture_output=True, text=True,
                             cwd=project, env=dict(env, ANTHROPIC_BASE_URL=sim.base_url), timeout=60)
        last = json.dumps(sim.message_requests[-1].body["messages"])
        asked = len(sim.message_requests)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    status = [x for x in lines if x["type"] == "system" and x["subtype"] == "workflow_status"]
    assert status[0]["phase"] == "running" and status[-1]["phase"] == "done" and status[-1]["done"] == 4
    assert any(s.get("message") == "all reviewed" for s in status) and {s["workflow"] for s in status} == {"six"}
    results = [x for x in lines if x["type"] == "result"]
    assert [r["is_error"] for r in results] == [False, True, False, False], results
    assert results[0]["result"] == "reviewed-alpha | reviewed-beta" and results[0]["workflow"]["agents"] == 4
    assert "broken.py: syntax error" in results[1]["errors"][0]
    assert [r["result"] for r in results[2:]] == ["just text", "noted"] and asked == 6
    assert lines[0]["type"] == "system" and lines[0]["subtype"] == "init"
    # the call and its final answer joined the conversation; the agents' work stayed theirs
    assert last.index("/six alpha beta") < last.index("reviewed-alpha | reviewed-beta") < last.index("and now?")
    assert "DRAFT alpha" not in last and "/broken" not in last
