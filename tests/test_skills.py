"""Skills as in Claude Code (issue 10 item 2): SKILL.md folders are listed to the model by name
and description only; the body arrives when the model calls the Skill tool (with the folder its
files are in) or when the person types `/name args`; a bad frontmatter is one warning line that
names the file and the key. Real files, the real CLI, the simulator."""

import json

import pytest
from test_memory import loopwright, texts

from loopwright.testing import Simulator

VERIFY = """---
name: verify-fix
description: How to verify a bug fix before calling it done
allowed-tools: [Bash, Read]
---
VERIFY-BODY run `pytest -q $ARGUMENTS[0]` and read ${CLAUDE_SKILL_DIR}/checklist.md; args were: $ARGUMENTS
"""


@pytest.fixture
def world(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    (project / ".claude" / "skills" / "verify-fix").mkdir(parents=True)
    (project / ".claude" / "skills" / "verify-fix" / "SKILL.md").write_text(VERIFY)
    (project / ".claude" / "skills" / "verify-fix" / "checklist.md").write_text("CHECKLIST\n")
    (project / ".claude" / "skills" / "manual-only").mkdir()
    (project / ".claude" / "skills" / "manual-only" / "SKILL.md").write_text(
        "---\ndescription: release steps\ndisable-model-invocation: true\n---\nRELEASE-BODY\n")
    (home / ".claude" / "skills" / "notes").mkdir(parents=True)
    (home / ".claude" / "skills" / "notes" / "SKILL.md").write_text("NOTES-BODY first line is the description\n")
    return home, project


def test_listed_by_description_and_loaded_only_when_the_model_calls_it(world):
    home, project = world
    script = [{"tool_use": {"name": "Skill", "input": {"skill": "verify-fix", "args": "tests/test_a.py -x"}}},
              {"tool_use": {"name": "Skill", "input": {"skill": "manual-only"}}},
              {"tool_use": {"name": "Skill", "input": {"skill": "nope"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "fix the bug"], home, project, sim)
        bodies = [r.body for r in sim.message_requests]
    assert out.returncode == 0, out.stderr
    first = json.dumps(bodies[0])
    assert "- verify-fix: How to verify a bug fix before calling it done" in first
    assert "- notes: NOTES-BODY first line is the description" in first
    assert "VERIFY-BODY" not in first and "manual-only" not in first and "RELEASE-BODY" not in first
    assert "Skill" in [t["name"] for t in bodies[0]["tools"]]
    result = bodies[1]["messages"][-1]["content"][0]
    folder = project / ".claude" / "skills" / "verify-fix"
    assert result["type"] == "tool_result" and not result.get("is_error")
    assert result["content"].startswith(f"Launching skill: verify-fix\n\nBase directory for this skill: {folder}")
    assert f"run `pytest -q tests/test_a.py` and read {folder}/checklist.md; args were: tests/test_a.py -x" \
        in result["content"]
    manual = bodies[2]["messages"][-1]["content"][0]
    assert manual["is_error"] and "only be started by the user (/manual-only)" in manual["content"]
    unknown = bodies[3]["messages"][-1]["content"][0]
    assert unknown["is_error"] and "Unknown skill: nope" in unknown["content"]


def test_the_person_starts_a_skill_with_a_slash(world):
    home, project = world
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "/manual-only v2.0"], home, project, sim)
        prompt = texts(sim.message_requests[0].body["messages"][-1])[-1]
    assert out.returncode == 0, out.stderr
    assert prompt.startswith("<command-name>/manual-only</command-name>\n<command-args>v2.0</command-args>")
    assert "RELEASE-BODY" in prompt and prompt.rstrip().endswith("ARGUMENTS: v2.0")


def test_a_bad_frontmatter_is_one_line_naming_the_file_and_key(world):
    home, project = world
    bad = project / ".claude" / "skills" / "broken" / "SKILL.md"
    bad.parent.mkdir()
    bad.write_text("---\ndescription: still usable\ndisable-model-invocation: maybe\ncolour: blue\n---\nBODY\n")
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "hi"], home, project, sim)
        first = json.dumps(sim.message_requests[0].body)
    lines = [ln for ln in out.stderr.splitlines() if "skills:" in ln]
    assert len(lines) == 2 and all(str(bad) in ln for ln in lines), out.stderr
    assert any("disable-model-invocation must be true or false, got 'maybe'" in ln for ln in lines)
    assert any("unknown frontmatter key 'colour'" in ln for ln in lines)
    assert "- broken: still usable" in first  # read leniently, as Claude Code does


def test_no_skills_no_tool_and_bare_turns_them_off(tmp_path, world):
    home, project = world
    empty = tmp_path / "empty"
    empty.mkdir()
    with Simulator([{"text": "ok"}, {"text": "ok"}]) as sim:
        loopwright(["-p", "hi"], tmp_path / "nohome", empty, sim)
        loopwright(["-p", "hi", "--bare"], home, project, sim)
        bodies = [r.body for r in sim.message_requests]
    assert all("Skill" not in [t["name"] for t in b.get("tools", [])] for b in bodies)
    assert all("verify-fix" not in json.dumps(b) for b in bodies)


def test_custom_commands_take_arguments_and_are_namespaced_by_folder(world):
    home, project = world
    commands = project / ".claude" / "commands"
    (commands / "git").mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review a file\nargument-hint: FILE FOCUS\n---\n"
                                        "REVIEW $0 focusing on $1, not $2 (all: $ARGUMENTS)\n")
    (commands / "git" / "tidy.md").write_text("TIDY-BODY\n")
    with Simulator([{"text": "ok"}, {"text": "ok"}]) as sim:
        loopwright(["-p", "/review src/app.py 'error handling'"], home, project, sim)
        loopwright(["-p", "/git:tidy"], home, project, sim)
        first, second = (texts(r.body["messages"][-1])[-1] for r in sim.message_requests)
        listing = json.dumps(sim.message_requests[0].body["messages"][0])
    # indexes count from 0, as Claude Code's skills count them; one with no argument stays as written
    assert "REVIEW src/app.py focusing on error handling, not $2" in first
    assert "- review: Review a file" in listing and "- git:tidy: TIDY-BODY" in listing
    assert "TIDY-BODY" in second and second.startswith("<command-name>/git:tidy</command-name>")
    assert "(all: src/app.py 'error handling')" in first


def test_init_lists_what_the_person_may_start_and_text_mode_says_what_loaded(world):
    home, project = world
    (project / "CLAUDE.md").write_text("PROJECT-RULE\n")
    with Simulator([{"text": "ok"}, {"text": "ok"}]) as sim:
        out = loopwright(["-p", "hi", "--output-format", "stream-json", "--verbose"], home, project, sim)
        init = json.loads(out.stdout.splitlines()[0])
        text = loopwright(["-p", "hi"], home, project, sim)
    assert init["subtype"] == "init" and sorted(init["skills"]) == ["manual-only", "notes", "verify-fix"]
    assert init["slash_commands"] == init["skills"]
    assert "loopwright: loaded 1 memory file(s) and 3 skill(s) and command(s)" in text.stderr.splitlines()
    assert "loaded" not in "".join(ln for ln in out.stderr.splitlines() if ln.startswith("loopwright:"))


def test_frontmatter_is_read_as_yaml_and_leniently_when_it_is_not(world):
    # YAML first (a comment after a value is no part of it, a quoted value's escapes are read);
    # a block YAML refuses (`description: Use when: …`, aliases) is still read, leniently
    home, project = world
    skills = project / ".claude" / "skills"
    for name, head in (("commented", 'description: Deploys the app # an internal note\nwhen_to_use: "on\\tFridays"'),
                       ("sloppy", "description: Use when: the person asks for a release"),
                       ("aliased", "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                        "description: laughs")):
        (skills / name).mkdir()
        (skills / name / "SKILL.md").write_text(f"---\n{head}\n---\nBODY\n")
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "hi"], home, project, sim)
        first = json.dumps(sim.message_requests[0].body)
    assert out.returncode == 0, out.stderr
    assert "- commented: Deploys the app - on\\tFridays" in first  # the comment gone, the escape read
    assert "- sloppy: Use when: the person asks for a release" in first
    assert "- aliased: laughs" in first
