"""The project's instructions reach the agent as in Claude Code (issue 10 item 1): memory files
from the user's home, the folders above the project and the project itself, with their `@`
imports, open the first request, each labelled with its path; a subfolder's file arrives after
the first Read there; a project file cannot import a file from outside the project; `--bare`
sends none; a resumed session keeps what it was given. Real files, the real CLI, the simulator."""

import json
import os
import subprocess
import sys

import pytest

from loopwright.context.memory import imports
from loopwright.testing import Simulator


@pytest.fixture
def world(tmp_path):
    home, parent = tmp_path / "home", tmp_path / "work"
    project = parent / "proj"
    for folder in (home / ".claude", home / "notes", home / ".ssh", project / "docs", project / "sub" / "deep"):
        folder.mkdir(parents=True)
    (home / ".claude" / "CLAUDE.md").write_text("USER-RULE always answer briefly\n@~/notes/u.md\n")
    (home / "notes" / "u.md").write_text("USER-IMPORT from notes\n")
    (home / ".ssh" / "id").write_text("SSH-SECRET\n")
    (parent / "CLAUDE.md").write_text("PARENT-RULE shared by every project here\n")
    (project / "CLAUDE.md").write_text("PROJECT-RULE run the tests\nSee @docs/style.md, not `@docs/ignored.md`.\n"
                                       "@missing.md\n@~/.ssh/id\n@CLAUDE.md\n<!-- HIDDEN-COMMENT -->\n")
    (project / "docs" / "style.md").write_text("STYLE-IMPORT four spaces\n")
    (project / "docs" / "ignored.md").write_text("IGNORED-IMPORT\n")
    (project / "CLAUDE.local.md").write_text("LOCAL-RULE my own\n")
    (project / ".claude").mkdir()
    (project / ".claude" / "CLAUDE.md").write_text("DOT-CLAUDE-RULE\n")
    (project / "LOOPWRIGHT.md").write_text("PROJECT-LW-RULE\n")
    (home / ".lw").mkdir()
    (home / ".lw" / "LOOPWRIGHT.md").write_text("OWN-HOME-RULE\n")  # LOOPWRIGHT_HOME is home/.lw
    (project / "sub" / "CLAUDE.md").write_text("SUB-RULE only here\n")
    (project / "sub" / "deep" / "x.txt").write_text("data\n")
    return home, project


def loopwright(args, home, project, sim, env=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))} | (env or {})
    env.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".lw"), ANTHROPIC_API_KEY="k",
               ANTHROPIC_BASE_URL=sim.base_url)
    return subprocess.run([sys.executable, "-m", "loopwright", *args], env=env, cwd=project, capture_output=True,
                          text=True, timeout=60)


def texts(message):
    return [b.get("text", "") for b in message["content"] if b["type"] == "text"]


def test_memory_from_three_levels_and_imports_opens_the_first_request(world):
    home, project = world
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "go now"], home, project, sim)
        first = sim.message_requests[0].body
    assert out.returncode == 0, out.stderr
    [memory] = texts(first["messages"][0])
    assert first["messages"][-1]["content"][-1]["text"] == "go now" and "go now" not in memory
    assert memory.startswith("<system-reminder>") and memory.endswith("</system-reminder>")
    order = ["USER-RULE", "USER-IMPORT", "OWN-HOME-RULE", "PARENT-RULE", "PROJECT-RULE", "STYLE-IMPORT",
             "DOT-CLAUDE-RULE", "PROJECT-LW-RULE", "LOCAL-RULE"]
    assert [memory.index(m) for m in order] == sorted(memory.index(m) for m in order)
    assert f"Contents of {project / 'CLAUDE.md'} (project instructions" in memory
    assert f"Contents of {project / 'CLAUDE.local.md'} (the user's private instructions" in memory
    assert f"Contents of {home / '.claude' / 'CLAUDE.md'} (the user's own instructions" in memory
    assert f"Contents of {home / '.lw' / 'LOOPWRIGHT.md'} (the user's own instructions" in memory
    assert f"Contents of {project.parent / 'CLAUDE.md'} (project instructions" in memory
    assert f"Contents of {project / 'docs' / 'style.md'} (project instructions" in memory
    for absent in ("SSH-SECRET", "IGNORED-IMPORT", "SUB-RULE", "HIDDEN-COMMENT"):
        assert absent not in memory
    assert memory.count("PROJECT-RULE") == 1  # a file imported again (itself) is given once
    warnings = [ln for ln in out.stderr.splitlines() if "memory:" in ln]
    assert len(warnings) == 3 and "@missing.md names no file" in warnings[0] and "outside the project" in warnings[1]
    assert "@CLAUDE.md was given already (an import cycle" in warnings[2]


def read(path):
    return {"tool_use": {"name": "Read", "input": {"file_path": path}}}


def test_a_subfolders_file_arrives_after_the_first_read_there(world):
    home, project = world
    (project / "sub" / "deep" / "CLAUDE.md").write_text("DEEP-RULE deeper still\n")
    with Simulator([read("sub/deep/x.txt"), read("sub/deep/x.txt"), {"text": "done"}]) as sim:
        out = loopwright(["-p", "read it"], home, project, sim)
        bodies = [r.body for r in sim.message_requests]
    assert out.returncode == 0, out.stderr
    assert "SUB-RULE" not in json.dumps(bodies[0])
    after_read = bodies[1]["messages"][-1]
    assert after_read["content"][0]["type"] == "tool_result"
    # As in Claude Code: one reminder a file, outer folder first, `Contents of PATH:` without a label.
    outer = f"<system-reminder>\nContents of {project / 'sub' / 'CLAUDE.md'}:\n\nSUB-RULE only here\n</system-reminder>"
    deep = project / "sub" / "deep" / "CLAUDE.md"
    inner = f"<system-reminder>\nContents of {deep}:\n\nDEEP-RULE deeper still\n</system-reminder>"
    assert texts(after_read) == [outer, inner]
    assert texts(bodies[2]["messages"][-1]) == []  # each file once


def test_a_failed_read_loads_nothing_and_a_subfolders_import_problem_is_said(world):
    home, project = world
    (project / "other").mkdir()
    (project / "other" / "CLAUDE.md").write_text("OTHER-RULE\n@nope.md\n")
    (project / "other" / "there.txt").write_text("here\n")
    with Simulator([read("other/absent.txt"), read("other/there.txt"), {"text": "done"}]) as sim:
        out = loopwright(["-p", "read it"], home, project, sim)
        bodies = [r.body for r in sim.message_requests]
    assert out.returncode == 0, out.stderr
    assert bodies[1]["messages"][-1]["content"][0].get("is_error") and "OTHER-RULE" not in json.dumps(bodies[1])
    assert "OTHER-RULE" in " ".join(texts(bodies[2]["messages"][-1]))
    nested = [ln for ln in out.stderr.splitlines() if "@nope.md" in ln]
    assert len(nested) == 1 and "names no file" in nested[0]


def test_compaction_gives_the_memory_again_read_afresh(world):
    home, project = world
    rewrite = {"tool_use": {"name": "Bash", "input": {"command": "echo PROJECT-RULE-NEW > CLAUDE.md"}}}
    script = [read("sub/deep/x.txt"), rewrite, read("docs/style.md"),
              {"fault": {"status": 400, "message": "prompt is too long: 1012 tokens > 1000 maximum"}},
              {"text": "<summary>SUMMARY read and rewrote</summary>"}, read("sub/deep/x.txt"), {"text": "done"}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "go", "--allowedTools", "Bash"], home, project, sim)
        bodies = [r.body for r in sim.message_requests]
    assert out.returncode == 0, out.stderr
    memory, summary = texts(bodies[5]["messages"][0])[:2]
    assert "PROJECT-RULE-NEW" in memory and "PROJECT-RULE run the tests" not in memory and "USER-RULE" in memory
    assert "SUMMARY read and rewrote" in summary and "SUB-RULE" not in json.dumps(bodies[5])
    assert "SUB-RULE" in " ".join(texts(bodies[6]["messages"][-1]))  # a subfolder's file comes back with a Read


def test_bare_sends_no_memory_and_a_setting_turns_it_off(world):
    home, project = world
    with Simulator([{"text": "ok"}, {"text": "ok"}]) as sim:
        loopwright(["-p", "go", "--bare"], home, project, sim)
        (project / ".loopwright").mkdir()
        (project / ".loopwright" / "settings.json").write_text(json.dumps({"memoryFiles": False}))
        loopwright(["-p", "go"], home, project, sim)
        bodies = [r.body for r in sim.message_requests]
    assert all("PROJECT-RULE" not in json.dumps(b) for b in bodies)


def test_a_resumed_session_keeps_the_memory_it_was_given(world):
    """The rule: memory is read once, when a session starts, and recorded in its transcript; a
    resumed session (`-c`, `-r`) is sent what was recorded, not the files as they are now, and a
    subfolder's file it was given already is not given again."""
    home, project = world
    with Simulator([read("sub/deep/x.txt"), {"text": "one"}, read("sub/deep/x.txt"), {"text": "two"}]) as sim:
        first = loopwright(["-p", "go"], home, project, sim)
        (project / "CLAUDE.md").write_text("PROJECT-RULE-CHANGED\n")
        second = loopwright(["-p", "-c", "again"], home, project, sim)
        bodies = [r.body for r in sim.message_requests]
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    resumed = json.dumps(bodies[2])
    assert "PROJECT-RULE run the tests" in resumed and "PROJECT-RULE-CHANGED" not in resumed
    assert resumed.count("Contents of " + str(project / "CLAUDE.md")) == 1
    assert texts(bodies[3]["messages"][-1]) == []  # sub/CLAUDE.md was given in the first run already
    assert json.dumps(bodies[3]).count("SUB-RULE") == 1


def test_agents_md_stands_in_only_without_a_claude_md(tmp_path):
    home, project = tmp_path / "home", tmp_path / "p"
    home.mkdir()
    project.mkdir()
    (project / "AGENTS.md").write_text("AGENTS-RULE\n")
    with Simulator([{"text": "ok"}, {"text": "ok"}]) as sim:
        loopwright(["-p", "go"], home, project, sim)
        (project / "CLAUDE.md").write_text("CLAUDE-RULE\n")
        loopwright(["-p", "go"], home, project, sim)
        first, second = (json.dumps(r.body) for r in sim.message_requests)
    assert "AGENTS-RULE" in first and "AGENTS-RULE" not in second and "CLAUDE-RULE" in second


def test_imports_ignore_code_and_addresses():
    text = "See @a.md and @./b/c.md, mail x@example.com, `@code.md`\n```\n@fenced.md\n```\n@~/u.md @/abs/d.md"
    assert imports(text) == ["a.md", "./b/c.md", "~/u.md", "/abs/d.md"]


def test_a_subagent_gets_the_same_memory(world):
    home, project = world
    call = {"name": "Agent", "input": {"description": "look", "prompt": "CHILD-TASK look at it"}}
    script = {"rules": [{"match": {"last_user_contains": "CHILD-TASK"}, "responses": [{"text": "CHILD-DONE"}]},
                        {"match": {"last_user_contains": "CHILD-DONE"}, "responses": [{"text": "all done"}]},
                        {"responses": [{"tool_use": call}]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "delegate"], home, project, sim)
        [child] = [r.body for r in sim.message_requests if "CHILD-TASK" in json.dumps(r.body["messages"][-1])]
    assert out.returncode == 0, out.stderr
    memory = texts(child["messages"][0])[0]
    assert "PROJECT-RULE" in memory and "USER-RULE" in memory and "delegate" not in json.dumps(child)


def test_imports_go_four_hops_deep_and_a_deeper_one_is_one_warning(tmp_path):
    from loopwright.context.memory import Memory

    project = tmp_path / "p"
    project.mkdir()
    (project / "CLAUDE.md").write_text("ROOT @c1.md\n")
    for i in range(1, 7):
        (project / f"c{i}.md").write_text(f"CHAIN-{i} @c{i + 1}.md\n")
    notices = []
    text = Memory(project, tmp_path / "nohome").opening(notices.append)
    assert all(f"CHAIN-{i}" in text for i in range(1, 5)) and "CHAIN-5" not in text
    warning = f"memory: {project / 'c4.md'}: the import @c5.md is more than 4 imports deep; skipped"
    assert [n.text for n in notices] == [warning]
