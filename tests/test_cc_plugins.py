"""Plugins written for Claude Code run unchanged: the shapes its official marketplace plugins use,
each in a test plugin of our own under tests/plugins (our names, wording and logic; their layout
and protocol). reviewkit: agents whose descriptions are YAML `|` blocks and whose `tools` name
tools we lack, a command whose `allowed-tools` list runs over several lines, a skill whose
description is a quoted text over several lines and whose body points at a supporting file.
guardrails: Python hook scripts that import the plugin's own package through CLAUDE_PLUGIN_ROOT,
keep their rules in the project's .claude/*.local.md files, deny with a reason, add context from
the structured `tool_response` of Bash, Write and Edit, and block a stop with a reason.
tutor-style: SessionStart hooks (one an executable run by its path) that add instructions as
additionalContext and leave variables for later commands in `$CLAUDE_ENV_FILE`.
gitkit: a command that shows the repository through !`git …` steps (read-only git needs no
grant) and grants `git add`/`git commit` for its turn in a comma-separated allowed-tools; its
UserPromptExpansion hooks (matched on the command's name) add a reminder or refuse a command.
The real CLI, the simulator, real files."""

import json
import subprocess
from pathlib import Path

from test_memory import loopwright, texts
from test_subagents import agent_call, requests_for

from loopwright.testing import Simulator

PLUGINS = Path(__file__).parent / "plugins"
REVIEWKIT = PLUGINS / "reviewkit"
GUARDRAILS = PLUGINS / "guardrails"
TUTOR = PLUGINS / "tutor-style"
GITKIT = PLUGINS / "gitkit"


def init_of(out):
    return next(e for e in map(json.loads, out.stdout.splitlines()) if e.get("subtype") == "init")


def test_yaml_text_blocks_in_agents_and_skills_reach_the_model_whole(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "hi", "--plugin-dir", str(REVIEWKIT), "--output-format", "stream-json", "--verbose"],
                         home, project, sim)
        first = sim.message_requests[0].body
    assert out.returncode == 0, out.stderr
    assert "warning" not in out.stderr, out.stderr
    agent_tool = next(t for t in first["tools"] if t["name"] == "Agent")["description"]
    tidy = next(ln for ln in agent_tool.splitlines() if ln.startswith("- reviewkit:tidy-checker:"))
    assert "Use this agent after code was changed" in tidy and ": |" not in tidy
    assert '<example>' in agent_tool and 'user: "Can you tidy the parser?"' in agent_tool
    listing = "\n".join(texts(first["messages"][0]))
    assert ("- reviewkit:proof-check: Checks an argument step by step and says which step fails. Use when asked "
            "to 'check this proof' or 'is this argument sound'.") in listing
    init = init_of(out)
    assert {"reviewkit:tidy-checker", "reviewkit:path-tracer"} <= set(init["agents"])
    assert init["plugins"] == [{"name": "reviewkit", "path": str(REVIEWKIT), "source": "reviewkit@inline",
                                "version": "0.3.1"}]


def test_an_agent_gets_the_tools_it_names_that_exist_and_its_model(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    script = {"rules": [
        {"match": {"last_user_contains": "TRACE-TASK"}, "responses": [{"text": "entry.py then store.py"}]},
        {"match": {"last_user_contains": "entry.py then store.py"}, "responses": [{"text": "traced"}]},
        {"responses": [agent_call("TRACE-TASK follow the login", "reviewkit:path-tracer")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "trace the login", "--plugin-dir", str(REVIEWKIT)], home, project, sim)
        child = requests_for(sim, "TRACE-TASK")[0].body
    assert out.returncode == 0, out.stderr
    assert "PATH-TRACER" in json.dumps(child["system"])
    # LS, NotebookRead, WebFetch and TodoWrite are not tools here: dropped, as Claude Code drops unknown names
    assert {t["name"] for t in child["tools"]} == {"Glob", "Grep", "Read", "BashOutput"}
    assert child["model"].startswith("claude-haiku")


def test_a_command_whose_allowed_tools_run_over_several_lines_grants_them(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    script = [{"tool_use": {"name": "Bash", "input": {"command": "mkdir -p src/parser"}}}, {"text": "laid out"}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "/reviewkit:scaffold parser", "--plugin-dir", str(REVIEWKIT)], home, project, sim)
        first = texts(sim.message_requests[0].body["messages"][-1])[-1]
        result = sim.message_requests[1].body["messages"][-1]["content"][0]
    assert out.returncode == 0, out.stderr
    assert "Lay out the module parser: make its folder" in first
    assert not result.get("is_error"), result
    assert (project / "src" / "parser").is_dir()


def test_a_skills_supporting_file_is_found_from_its_base_directory(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    folder = REVIEWKIT / "skills" / "proof-check"
    script = [{"tool_use": {"name": "Skill", "input": {"skill": "reviewkit:proof-check"}}},
              {"tool_use": {"name": "Read", "input": {"file_path": str(folder / "references" / "checklist.md")}}},
              {"text": "checked"}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "check this proof", "--plugin-dir", str(REVIEWKIT)], home, project, sim)
        loaded = json.dumps(sim.message_requests[1].body["messages"][-1])
        read = sim.message_requests[2].body["messages"][-1]["content"][0]
    assert out.returncode == 0, out.stderr
    assert f"Base directory for this skill: {folder}" in loaded and "references/checklist.md" in loaded
    assert not read.get("is_error") and "Does each step follow" in read["content"], read


def rule(project, name, when, pattern, message, then="warn"):
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / f"guardrails.{name}.local.md").write_text(
        f"---\nwhen: {when}\npattern: {pattern}\nthen: {then}\n---\n{message}\n")


def results(request):
    return [b for b in request.body["messages"][-1]["content"] if b["type"] == "tool_result"]


def test_rule_hooks_deny_with_a_reason_and_read_the_structured_tool_response(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    (project / "build").mkdir()
    rule(project, "no-wipe", "command", r"rm\s+-rf", "Wiping folders is not allowed here; delete single files.", "deny")
    rule(project, "secrets", "output", "hunter2", "That output holds a password: do not repeat it.")
    rule(project, "notes", "written", r"notes\.txt$", "notes.txt is read by the release script; keep it short.")
    rule(project, "ask-first", "prompt", "deploy", "Deploys need a ticket number.")
    script = [{"tool_use": {"name": "Bash", "input": {"command": "rm -rf build"}}},
              {"tool_use": {"name": "Bash", "input": {"command": "echo the password is hunter2"}}},
              {"tool_use": {"name": "Write", "input": {"file_path": "notes.txt", "content": "v1\n"}}},
              {"tool_use": {"name": "Edit", "input": {"file_path": "notes.txt", "old_string": "v1",
                                                      "new_string": "v2"}}},
              {"text": "done"}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "tidy up before the deploy", "--plugin-dir", str(GUARDRAILS),
                          "--allowedTools", "Bash", "Write", "Edit"], home, project, sim)
        requests = list(sim.message_requests)
    assert out.returncode == 0, out.stderr
    assert "guardrails failed" not in out.stderr
    assert "[guardrail ask-first] Deploys need a ticket number." in json.dumps(requests[0].body["messages"][-1])
    [denied] = results(requests[1])
    assert denied["is_error"] and "[guardrail no-wipe] Wiping folders is not allowed here" in denied["content"]
    assert (project / "build").is_dir()
    [shown] = results(requests[2])
    assert "the password is hunter2" in shown["content"] and "[guardrail secrets] That output holds a password" \
        in shown["content"]
    for request in requests[3:5]:  # Write's and Edit's responses both carry the filePath
        [written] = results(request)
        assert "[guardrail notes] notes.txt is read by the release script" in written["content"], written
    assert (project / "notes.txt").read_text() == "v2\n"


def test_a_rule_hook_blocks_the_stop_until_the_transcript_shows_the_tests_ran(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    rule(project, "tests-first", "stop", "pytest -q", "Run the tests (pytest -q) before you stop.")
    script = [{"text": "All fixed."}, {"tool_use": {"name": "Bash", "input": {"command": "echo pytest -q passed"}}},
              {"text": "Fixed, and the tests pass."}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "fix the bug", "--plugin-dir", str(GUARDRAILS), "--allowedTools", "Bash",
                          "--output-format", "json"], home, project, sim)
        requests = list(sim.message_requests)
    assert out.returncode == 0, out.stderr
    assert len(requests) == 3
    assert "[guardrail tests-first] Run the tests (pytest -q) before you stop." in texts(
        requests[1].body["messages"][-1])[-1]
    assert json.loads(out.stdout)["result"] == "Fixed, and the tests pass."


def test_session_start_hooks_add_instructions_and_variables_for_later_commands(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "tests").mkdir()
    script = [{"tool_use": {"name": "Bash", "input": {"command": 'echo "kind=$STACK_KIND tests=$STACK_HAS_TESTS"'}}},
              {"text": "noted"}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "what is this project?", "--plugin-dir", str(TUTOR), "--allowedTools", "Bash"],
                         home, project, sim)
        first = json.dumps(sim.message_requests[0].body["messages"])
        result = sim.message_requests[1].body["messages"][-1]["content"][0]
    assert out.returncode == 0, out.stderr
    assert "TUTOR MODE: after each change, add a short note on why it was made." in first
    assert result["content"] == "kind=python tests=yes, in tests/", result
    assert "warning" not in out.stderr, out.stderr


def repo(project):
    """A git repository with one commit of app.py, on the branch trunk."""
    for step in (["init", "-q", "-b", "trunk"], ["config", "user.name", "t"], ["config", "user.email", "t@e.invalid"]):
        subprocess.run(["git", *step], cwd=project, check=True)
    (project / "app.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "app.py"], cwd=project, check=True)
    subprocess.run(["git", "commit", "-qm", "first"], cwd=project, check=True)


def test_a_git_command_shows_the_repository_and_grants_the_commit_for_its_turn(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    repo(project)
    (project / "app.py").write_text("x = 2\n")
    script = [{"content": [{"type": "tool_use", "id": "a", "name": "Bash", "input": {"command": "git add app.py"}},
                           {"type": "tool_use", "id": "c", "name": "Bash",
                            "input": {"command": "git commit -m 'x is 2'"}}]},
              {"text": "saved"}, {"tool_use": {"name": "Bash", "input": {"command": "git commit --allow-empty -m again"}}},
              {"text": "no"}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "/gitkit:save", "--plugin-dir", str(GITKIT)], home, project, sim)
        sent = texts(sim.message_requests[0].body["messages"][-1])[0]
        granted = results(sim.message_requests[1])
        # the grant was for that command's turn only
        later = loopwright(["-p", "commit again", "--plugin-dir", str(GITKIT)], home, project, sim)
        refused = results(sim.message_requests[3])
    assert out.returncode == 0 and later.returncode == 0, out.stderr + later.stderr
    assert "- Status:  M app.py" in sent and "+x = 2" in sent and "- Branch: trunk" in sent and "first" in sent
    assert "!`" not in sent
    assert [r.get("is_error", False) for r in granted] == [False, False], granted
    log = subprocess.run(["git", "log", "--oneline"], cwd=project, capture_output=True, text=True).stdout
    assert "x is 2" in log and "again" not in log
    assert refused[0]["is_error"]


def test_user_prompt_expansion_hooks_match_the_command_and_add_context_or_refuse(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    repo(project)
    with Simulator([{"text": "nothing to save"}]) as sim:
        saved = loopwright(["-p", "/gitkit:save", "--plugin-dir", str(GITKIT), "--output-format", "stream-json",
                            "--verbose", "--include-hook-events"], home, project, sim)
        sent = texts(sim.message_requests[0].body["messages"][-1])
        shipped = loopwright(["-p", "/gitkit:ship", "--plugin-dir", str(GITKIT), "--output-format", "json"],
                             home, project, sim)
        calls = len(sim.message_requests)
    assert saved.returncode == 0, saved.stderr
    assert sent[0].startswith("<command-name>/gitkit:save</command-name>")
    assert "Commit messages here start with a verb." in sent[1:]
    hooked = [e for e in map(json.loads, saved.stdout.splitlines()) if e.get("subtype") == "hook_response"]
    assert [e["hook_event"] for e in hooked].count("UserPromptExpansion") == 1, hooked
    result = json.loads(shipped.stdout)
    assert calls == 1 and result["is_error"] and "shipping is frozen until Monday" in json.dumps(result)


def test_an_agent_whose_tools_name_agent_types_may_start_only_those(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    script = {"rules": [
        {"match": {"last_user_contains": "LEAD-TASK"}, "responses": [{"text": "split up"}]},
        {"match": {"last_user_contains": "split up"}, "responses": [{"text": "reviewed"}]},
        {"responses": [agent_call("LEAD-TASK review the parser", "reviewkit:lead-reviewer")]}]}
    with Simulator(script) as sim:
        out = loopwright(["-p", "review the parser", "--plugin-dir", str(REVIEWKIT)], home, project, sim)
        child = requests_for(sim, "LEAD-TASK")[0].body
    assert out.returncode == 0, out.stderr
    assert {t["name"] for t in child["tools"]} == {"Read", "Glob", "Agent"}
    offered = next(t for t in child["tools"] if t["name"] == "Agent")["description"]
    kinds = [ln.split(":", 2)[:2] for ln in offered.splitlines() if ln.startswith("- ")]
    assert sorted(":".join(k)[2:] for k in kinds) == ["reviewkit:path-tracer", "reviewkit:tidy-checker"]


def test_a_commands_shell_step_may_read_its_own_plugins_files(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "/reviewkit:checklist", "--plugin-dir", str(REVIEWKIT)], home, project, sim)
        sent = texts(sim.message_requests[0].body["messages"][-1])[0]
    assert out.returncode == 0, out.stderr
    assert "The checklist:\n\n1. Is every assumption stated?\n2. Does each step follow" in sent


def test_a_plugins_hooks_on_events_that_never_fire_here_are_said(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    root = tmp_path / "asker"
    (root / "hooks").mkdir(parents=True)
    hook = [{"hooks": [{"type": "command", "command": "true"}]}]
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {
        "PermissionRequest": hook, "SessionStrat": hook, "Stop": hook}}))
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "hi", "--plugin-dir", str(root)], home, project, sim)
    assert out.returncode == 0, out.stderr
    said = [ln for ln in out.stderr.splitlines() if "warning: plugin:" in ln]
    hooks_file = root / "hooks" / "hooks.json"
    assert said == [
        f"loopwright: warning: plugin: {hooks_file}: hooks.PermissionRequest: Claude Code fires this event, "
        "loopwright does not (yet): these hooks will not run",
        f"loopwright: warning: plugin: {hooks_file}: hooks.SessionStrat: no such hook event: these hooks will "
        "never run (did you mean SessionStart?)"], out.stderr


def test_an_async_hooks_decision_does_not_count_but_what_it_says_is_delivered(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(), project.mkdir()
    said = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "logged only", "additionalContext": "LOGGED-CALL"}}
    settings = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": f"echo '{json.dumps(said)}'", "async": True}]}]}}
    script = [{"tool_use": {"name": "Bash", "input": {"command": "echo ran"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "go", "--settings", json.dumps(settings), "--allowedTools", "Bash"], home, project, sim)
        [result] = results(sim.message_requests[1])
    assert out.returncode == 0, out.stderr
    assert not result.get("is_error") and result["content"].startswith("ran") and "LOGGED-CALL" in result["content"]
