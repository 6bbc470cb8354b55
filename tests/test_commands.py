"""Custom commands as Claude Code runs them (issue 10 item 4): `$ARGUMENTS` and `$N`, the
`` !`cmd` `` and ```` ```! ```` forms replaced by the command's output before the prompt is sent
(each run through the permission gate with the command's `allowed-tools`), `@file` attached
under the Read rules, `allowed-tools` granted for the turn, `model` for the turn; a step that is
refused or fails, and an unknown `/name`, are one clear error and nothing is sent. Real files,
the real CLI, the simulator."""

import json
import os
import subprocess
import sys

import pytest
from test_memory import loopwright, texts

from loopwright.testing import Simulator

RELEASE = """---
description: Prepare a release
allowed-tools: Bash(./scripts/version.sh:*), Bash(git tag:*)
model: haiku
---
Release $0 (notes: $ARGUMENTS).
Current version: !`./scripts/version.sh --short`
```!
./scripts/version.sh --long $1
```
Follow @docs/RELEASING.md and mind user@example.com.
"""


@pytest.fixture
def world(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    for folder in (home, project / ".claude" / "commands", project / "scripts", project / "docs"):
        folder.mkdir(parents=True)
    (project / ".claude" / "commands" / "release.md").write_text(RELEASE)
    script = project / "scripts" / "version.sh"
    script.write_text('#!/bin/sh\necho "v1.2.$# $*"\n')
    script.chmod(0o755)
    (project / "docs" / "RELEASING.md").write_text("RELEASING-STEPS tag, push, announce\n")
    return home, project


def first_prompt(sim):
    return "\n".join(texts(sim.message_requests[0].body["messages"][-1]))


def test_outputs_files_grants_and_model_of_a_command(world):
    home, project = world
    script = [{"tool_use": {"name": "Bash", "input": {"command": "./scripts/version.sh --again"}}}, {"text": "ok"}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "/release v2 fast", "--output-format", "json"], home, project, sim)
        prompt, model = first_prompt(sim), sim.message_requests[0].body["model"]
        tool_result = sim.message_requests[1].body["messages"][-1]["content"][0]
    assert out.returncode == 0, out.stderr
    assert prompt.startswith("<command-name>/release</command-name>\n<command-args>v2 fast</command-args>")
    assert "Release v2 (notes: v2 fast)." in prompt
    assert "Current version: v1.2.1 --short\n" in prompt  # inline: the output in its place
    assert "v1.2.2 --long fast" in prompt and "```!" not in prompt and "!`" not in prompt
    assert f'Called the Read tool with the following input: {{"file_path": "{project}/docs/RELEASING.md"}}' in prompt
    assert "RELEASING-STEPS tag, push, announce" in prompt and "example.com" in prompt
    assert model.startswith("claude-haiku")  # the command's model, for its turn
    # allowed-tools let the model's call run in this turn with no --allowedTools
    assert not tool_result.get("is_error") and "v1.2.1 --again" in tool_result["content"], tool_result
    assert json.loads(out.stdout)["permission_denials"] == []


def test_a_step_that_is_not_allowed_stops_the_command_and_nothing_is_sent(world):
    home, project = world
    command = project / ".claude" / "commands" / "peek.md"
    command.write_text("Here: !`cat /etc/hostname`\n")
    with Simulator([{"text": "never"}]) as sim:
        out = loopwright(["-p", "/peek"], home, project, sim)
        sent = len(sim.message_requests)
    assert out.returncode != 0 and sent == 0
    error = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(error) == 1, out.stderr
    assert str(command) in error[0] and "the shell step `cat /etc/hostname` was not allowed" in error[0]
    assert "Bash(cat:*)" in error[0]


def test_a_failing_step_says_its_exit_and_output(world):
    home, project = world
    (project / ".claude" / "commands" / "broken.md").write_text(
        "---\nallowed-tools: [\"Bash(./scripts/fail.sh:*)\"]\n---\nX !`./scripts/fail.sh`\n")
    fail = project / "scripts" / "fail.sh"
    fail.write_text("#!/bin/sh\necho 'no config found' >&2\nexit 3\n")
    fail.chmod(0o755)
    with Simulator([{"text": "never"}]) as sim:
        out = loopwright(["-p", "/broken"], home, project, sim)
        sent = len(sim.message_requests)
    assert out.returncode != 0 and sent == 0
    assert "the shell step `./scripts/fail.sh` failed: Exit code 3" in out.stderr
    assert "no config found" in out.stderr


def test_a_file_the_read_rules_keep_private_is_not_attached(world):
    home, project = world
    (project / ".env").write_text("SECRET=1\n")
    (project / ".claude" / "commands" / "env.md").write_text("Check @.env please\n")
    settings = json.dumps({"permissions": {"deny": ["Read(./.env)"]}})
    with Simulator([{"text": "never"}]) as sim:
        out = loopwright(["-p", "/env", "--settings", settings], home, project, sim)
        sent = len(sim.message_requests)
    assert out.returncode != 0 and sent == 0
    assert "@.env may not be read" in out.stderr and "SECRET" not in out.stderr


def test_an_unknown_command_is_refused_with_the_nearest_name(world):
    home, project = world
    with Simulator([{"text": "ok"}]) as sim:
        typo = loopwright(["-p", "/relase v2"], home, project, sim)
        path = loopwright(["-p", "/tmp is full, clean it"], home, project, sim)
        sent = [first_prompt(sim)] if sim.message_requests else []
    assert typo.returncode != 0
    assert "Unknown command: /relase; did you mean /release?" in typo.stderr
    assert sent == ["/tmp is full, clean it"] and path.returncode == 0  # a path is text, as in Claude Code


def test_outputs_run_in_the_working_directory_with_the_session_id(world):
    home, project = world
    (project / ".claude" / "commands" / "where.md").write_text(
        "---\nallowed-tools: Bash(./scripts/env.sh)\n---\n!`./scripts/env.sh`\n")
    env = project / "scripts" / "env.sh"
    env.write_text('#!/bin/sh\necho "cwd=$(pwd) sid=$CLAUDE_CODE_SESSION_ID"\n')
    env.chmod(0o755)
    sid = "5f0c3a52-8f7e-4a51-9a43-6d1d4f1c2b11"
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "/where", "--session-id", sid], home, project, sim)
        prompt = first_prompt(sim)
    assert out.returncode == 0, out.stderr
    assert f"cwd={os.path.realpath(project)} sid={sid}" in prompt


def test_a_skill_the_model_starts_runs_its_steps_under_the_sessions_rules(world):
    home, project = world
    skill = project / ".claude" / "skills" / "version"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\ndescription: Report the version\n---\nVERSION !`./scripts/version.sh $0`\n")
    calls = [{"tool_use": {"name": "Skill", "input": {"skill": "version", "args": "now"}}}, {"text": "ok"}]
    with Simulator(calls * 2) as sim:
        allowed = loopwright(["-p", "which version?", "--allowedTools", "Bash(./scripts/version.sh:*)"],
                             home, project, sim)
        refused = loopwright(["-p", "which version?"], home, project, sim)
        results = [sim.message_requests[i].body["messages"][-1]["content"][0] for i in (1, 3)]
    assert allowed.returncode == 0 and refused.returncode == 0, allowed.stderr + refused.stderr
    assert not results[0].get("is_error") and "VERSION v1.2.1 now" in results[0]["content"]
    assert results[1]["is_error"] and "the shell step `./scripts/version.sh now` was not allowed" in results[1]["content"]


def test_in_stream_json_input_an_unknown_command_is_that_turns_error_and_the_session_goes_on(world):
    home, project = world
    lines = [{"type": "user", "message": {"role": "user", "content": text}} for text in ("/relase v2", "hello")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    with Simulator([{"text": "hi there"}]) as sim:
        env.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".lw"), ANTHROPIC_API_KEY="k",
                   ANTHROPIC_BASE_URL=sim.base_url)
        out = subprocess.run([sys.executable, "-m", "loopwright", "--input-format", "stream-json", "--output-format",
                              "stream-json", "--verbose"], input="".join(json.dumps(x) + "\n" for x in lines),
                             env=env, cwd=project, capture_output=True, text=True, timeout=60)
        sent = len(sim.message_requests)
    results = [e for e in map(json.loads, out.stdout.splitlines()) if e["type"] == "result"]
    assert sent == 1 and [r["is_error"] for r in results] == [True, False], out.stdout + out.stderr
    assert "Unknown command: /relase; did you mean /release?" in results[0]["errors"][0]
    assert results[1]["result"] == "hi there" and out.returncode == 0


# Issue 29 item 6: a shell step is found in the file's text before the arguments are filled in,
# so arguments never add one; a model-started skill's step is a Bash call of the loop's.

def skill_file(project, name, body):
    folder = project / ".claude" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\ndescription: {name}\n---\n{body}")


def skill_call(name, args=""):
    return {"tool_use": {"name": "Skill", "input": {"skill": name, "args": args}, "id": "toolu_skill1"}}


def result_of(request):
    return request.body["messages"][-1]["content"][0]


def transcript_records(home, sid):
    [path] = (home / ".lw").rglob(f"{sid}.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_step_the_models_arguments_carry_stays_text(world):
    home, project = world
    skill_file(project, "echo-it", "Say: $ARGUMENTS\n")
    with Simulator([skill_call("echo-it", "!`touch pwned` and ```!\ntouch pwned2\n```"), {"text": "ok"}]) as sim:
        out = loopwright(["-p", "go", "--allowedTools", "Bash"], home, project, sim)
        result = result_of(sim.message_requests[1])
    assert out.returncode == 0, out.stderr
    assert not result.get("is_error") and "Say: !`touch pwned` and ```!\ntouch pwned2\n```" in result["content"]
    assert not (project / "pwned").exists() and not (project / "pwned2").exists()


def test_a_step_the_person_types_as_an_argument_stays_text(world):
    home, project = world
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "/release !`touch pwned`", "--allowedTools", "Bash"], home, project, sim)
        prompt = first_prompt(sim)
    assert out.returncode == 0, out.stderr
    assert "Release !`touch (notes: !`touch pwned`)." in prompt and not (project / "pwned").exists()


def test_arguments_inside_a_files_step_are_words_never_commands(world):
    home, project = world
    skill_file(project, "ver", "VERSION !`./scripts/version.sh $ARGUMENTS` FIRST !`./scripts/version.sh $0`\n")
    args = "x; touch pwned1 $(touch pwned2) `touch pwned3` 'two words'"
    with Simulator([skill_call("ver", args), {"text": "ok"}]) as sim:
        out = loopwright(["-p", "go", "--allowedTools", "Bash(./scripts/version.sh:*)"], home, project, sim)
        result = result_of(sim.message_requests[1])
    assert out.returncode == 0, out.stderr
    assert not result.get("is_error"), result
    # each argument a word of the script's, as a shell splits the arguments: 8 of them, none run
    assert "VERSION v1.2.8 x; touch pwned1 $(touch pwned2) `touch pwned3` two words FIRST v1.2.1 x;" in result["content"]
    assert not list(project.glob("pwned*"))


def hook_settings(project, script):
    hook = project / "hook.sh"
    hook.write_text("#!/bin/sh\n" + script)
    hook.chmod(0o755)
    settings = {"hooks": {event: [{"matcher": "Bash", "hooks": [{"type": "command", "command": str(hook)}]}]
                          for event in ("PreToolUse", "PostToolUse")}}
    (project / "settings.json").write_text(json.dumps(settings))
    return str(project / "settings.json")


def test_a_skills_own_step_is_a_bash_call_that_a_pre_tool_use_hook_blocks(world):
    home, project = world
    skill_file(project, "maker", "MADE !`touch made`\n")
    blocker = hook_settings(project, 'cat >> hook-input.jsonl; echo >> hook-input.jsonl\n'
                                     'echo "no shell commands here" >&2; exit 2\n')
    sid = "2f1c9a52-7d3e-4f6a-9b1c-0d2e3f4a5b6c"
    with Simulator([skill_call("maker"), {"text": "ok"}]) as sim:
        out = loopwright(["-p", "go", "--allowedTools", "Bash", "--settings", blocker, "--session-id", sid,
                          "--output-format", "json"], home, project, sim)
        result = result_of(sim.message_requests[1])
    assert out.returncode == 0, out.stderr
    assert not (project / "made").exists()
    assert result["is_error"] and "the shell step `touch made` was not allowed" in result["content"]
    assert "A PreToolUse hook blocked this call: no shell commands here" in result["content"]
    [seen] = [json.loads(line) for line in (project / "hook-input.jsonl").read_text().splitlines() if line]
    assert seen["tool_name"] == "Bash" and seen["tool_input"] == {"command": "touch made"}
    assert seen["tool_use_id"] == "toolu_skill1_step1"
    records = transcript_records(home, sid)
    started = [(r["name"], r["input"], r["toolUseId"]) for r in records if r["type"] == "tool_started"]
    assert started == [("Skill", {"skill": "maker", "args": ""}, "toolu_skill1"),
                       ("Bash", {"command": "touch made"}, "toolu_skill1_step1")]
    denied = json.loads(out.stdout)["permission_denials"]
    assert [(d["tool_name"], d["tool_use_id"]) for d in denied] == [("Bash", "toolu_skill1_step1")]


def test_a_skills_allowed_step_runs_with_the_hooks_around_it_and_is_recorded(world):
    home, project = world
    skill_file(project, "maker", "MADE !`touch made; echo made-it`\n")
    logger = hook_settings(project, 'cat >> hook-input.jsonl; echo >> hook-input.jsonl\n')
    sid = "3a2b1c0d-7d3e-4f6a-9b1c-0d2e3f4a5b6c"
    with Simulator([skill_call("maker"), {"text": "ok"}]) as sim:
        out = loopwright(["-p", "go", "--allowedTools", "Bash", "--settings", logger, "--session-id", sid],
                         home, project, sim)
        result = result_of(sim.message_requests[1])
    assert out.returncode == 0, out.stderr
    assert (project / "made").exists() and not result.get("is_error") and "MADE made-it" in result["content"]
    seen = [json.loads(line) for line in (project / "hook-input.jsonl").read_text().splitlines() if line]
    assert [s["hook_event_name"] for s in seen] == ["PreToolUse", "PostToolUse"]
    assert seen[1]["tool_response"]["stdout"].strip() == "made-it"
    finished = [r for r in transcript_records(home, sid) if r["type"] == "tool_finished"]
    assert [r["toolUseId"] for r in finished] == ["toolu_skill1_step1", "toolu_skill1"]


def test_a_skills_step_is_refused_by_the_sessions_rules_without_a_rule(world):
    home, project = world
    skill_file(project, "maker", "MADE !`touch made`\n")
    with Simulator([skill_call("maker"), {"text": "ok"}]) as sim:
        out = loopwright(["-p", "go", "--output-format", "json"], home, project, sim)
        result = result_of(sim.message_requests[1])
    assert out.returncode == 0, out.stderr
    assert result["is_error"] and "the shell step `touch made` was not allowed: Permission needed for Bash" \
        in result["content"] and not (project / "made").exists()
