"""Plugins as Claude Code loads them (issue 10 items 4 and 5): `--plugin-dir` brings a plugin's
commands (as `/plugin:name`), skills, agents, hooks (`${CLAUDE_PLUGIN_ROOT}` filled in and set)
and MCP servers; system/init lists it and text mode counts it; a broken plugin is one error line
naming the file and the key. The end-to-end test drives tests/plugins/ralph, our own plugin in
the Ralph Loop plugin's layout: its command's ```! step writes the loop's state, its Stop hook
reads the JSONL transcript and re-sends the prompt until the promise or the iteration cap.
Real files, the real CLI, the simulator."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_memory import loopwright, texts

from loopwright.testing import Simulator

RALPH = Path(__file__).parent / "plugins" / "ralph"
TOOLBOX = Path(__file__).parent / "mcpservers" / "toolbox.py"


@pytest.fixture
def dirs(tmp_path):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    return home, project


# The Ralph Loop keeps its state in .claude/ralph-loop.local.md, written by its setup step: a
# protected path, read-only to the model's commands in the sandbox. The step is the command
# file's own, started by the person typing /ralph:ralph-loop, so it runs as theirs (outside the
# sandbox, judged by the gate) and the plugin works unchanged under the default sandbox.


def last_user_text(request):
    return texts(request.body["messages"][-1])[-1]


def test_ralph_loop_runs_until_the_iterations_run_out(dirs):
    home, project = dirs
    prompt = "/ralph:ralph-loop fix it --max-iterations 3 --completion-promise DONE"
    script = [{"text": "Looked at it."}, {"text": "Fixed half."}, {"text": "Fixed most."}]
    with Simulator(script) as sim:
        out = loopwright(["-p", prompt, "--plugin-dir", str(RALPH), "--output-format", "json"], home, project,
                         sim)
        requests = list(sim.message_requests)
    assert out.returncode == 0, out.stderr
    first = "\n".join(texts(requests[0].body["messages"][-1]))
    assert first.startswith("<command-name>/ralph:ralph-loop</command-name>\n"
                            "<command-args>fix it --max-iterations 3 --completion-promise DONE</command-args>")
    assert "Loop started: iteration 1, at most 3" in first and "say <promise>DONE</promise>" in first
    assert "```!" not in first and "${CLAUDE_PLUGIN_ROOT}" not in first
    # the hook ran for this session (the state names it) and re-sent the prompt twice, then let it stop
    assert len(requests) == 3 and [last_user_text(r) for r in requests[1:]] == ["fix it", "fix it"]
    assert json.loads(out.stdout)["terminal_reason"] == "completed"
    assert not (project / ".claude" / "ralph-loop.local.md").exists()


def test_ralph_loop_ends_when_the_promise_is_kept(dirs):
    home, project = dirs
    prompt = "/ralph:ralph-loop make the tests pass --max-iterations 10 --completion-promise DONE"
    script = [{"text": "Not yet."}, {"tool_use": {"name": "Bash", "input": {"command": "true"}}},
              {"content": [{"type": "text", "text": "All green."}, {"type": "text", "text": "<promise>DONE</promise>"}]}]
    with Simulator(script) as sim:
        out = loopwright(["-p", prompt, "--plugin-dir", str(RALPH), "--allowedTools", "Bash"], home, project,
                         sim)
        requests = list(sim.message_requests)
    assert out.returncode == 0, out.stderr
    assert len(requests) == 3 and last_user_text(requests[1]) == "make the tests pass"
    assert out.stdout.strip().endswith("<promise>DONE</promise>")
    assert not (project / ".claude" / "ralph-loop.local.md").exists()


def test_a_plugin_command_needs_its_namespace(dirs):
    home, project = dirs
    with Simulator([]) as sim:
        out = loopwright(["-p", "/ralph-loop fix it", "--plugin-dir", str(RALPH)], home, project, sim)
        sent = len(sim.message_requests)
    assert out.returncode != 0 and sent == 0
    assert "Unknown command: /ralph-loop; did you mean /ralph:ralph-loop?" in out.stderr


def demo_plugin(root, name="demo"):
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": name, "version": "2.0.0"}))
    for folder in ("commands", "skills/check", "agents", "hooks"):
        (root / folder).mkdir(parents=True)
    (root / "commands" / "hello.md").write_text("---\ndescription: Say hello\n---\nHELLO from ${CLAUDE_PLUGIN_ROOT} to $0\n")
    (root / "skills" / "check" / "SKILL.md").write_text("---\ndescription: Check the work\n---\nCHECK-BODY\n")
    (root / "agents" / "helper.md").write_text("---\nname: helper\ndescription: Helps out\n---\nHELPER-PROMPT\n")
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": f"echo \"${{CLAUDE_PLUGIN_ROOT}} $CLAUDE_PLUGIN_ROOT\" > {name}-hook-saw.txt"}]}]}}))
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"tb": {
        "command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/../toolbox.py"]}}}))
    (root.parent / "toolbox.py").write_text(TOOLBOX.read_text())
    (root / "bin").mkdir()
    (root / "bin" / "demo-greet").write_text("#!/bin/sh\necho \"greetings from demo-greet $1\"\n")
    (root / "bin" / "demo-greet").chmod(0o755)
    return root


def test_a_plugins_bin_folder_is_on_the_bash_path(dirs, tmp_path):
    home, project = dirs
    root = demo_plugin(tmp_path / "plugs" / "demo")
    (root / ".mcp.json").unlink()
    script = [{"tool_use": {"name": "Bash", "input": {"command": "demo-greet you"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        # the test's plugin folder is under /tmp, which the sandbox replaces with a private one: the
        # plugin's folder stays in sight
        out = loopwright(["-p", "greet", "--plugin-dir", str(root), "--allowedTools", "Bash"], home, project,
                         sim)
        result = sim.message_requests[1].body["messages"][-1]["content"][0]
    assert out.returncode == 0, out.stderr
    assert not result.get("is_error") and "greetings from demo-greet you" in result["content"], result


def test_a_plugins_parts_are_loaded_namespaced_and_listed(dirs, tmp_path):
    pytest.importorskip("mcp")
    home, project = dirs
    root = demo_plugin(tmp_path / "plugs" / "demo-plugin")
    with Simulator([{"text": "ok"}, {"text": "ok"}]) as sim:
        out = loopwright(["-p", "/demo:hello world", "--plugin-dir", str(root), "--output-format", "stream-json",
                          "--verbose"], home, project, sim)
        first = sim.message_requests[0].body
        text = loopwright(["-p", "hi", "--plugin-dir", str(root)], home, project, sim)
    assert out.returncode == 0, out.stderr
    init = next(e for e in map(json.loads, out.stdout.splitlines()) if e.get("subtype") == "init")
    assert init["plugins"] == [{"name": "demo", "path": str(root), "source": "demo@inline", "version": "2.0.0"}]
    assert sorted(init["slash_commands"]) == ["demo:check", "demo:hello"] and "demo:helper" in init["agents"]
    assert f"HELLO from {root} to world" in last_user_text(sim.message_requests[0])
    assert "- demo:check: Check the work" in json.dumps(first["messages"][0])
    assert "mcp__plugin_demo_tb__add" in [t["name"] for t in first["tools"]]
    assert (project / "demo-hook-saw.txt").read_text().split() == [str(root), str(root)]
    assert "loopwright: loaded 2 skill(s) and command(s), 1 subagent(s) and 1 plugin(s)" in text.stderr.splitlines()


@pytest.mark.parametrize("breakage, named", [
    (lambda r: (r / ".claude-plugin" / "plugin.json").write_text('{"name": "demo", "commands": 3}'),
     ".claude-plugin/plugin.json: commands: expected a path or a list of paths"),
    (lambda r: (r / ".claude-plugin" / "plugin.json").write_text('{"name": "de mo"}'),
     ".claude-plugin/plugin.json: name: expected a plugin name"),
    (lambda r: (r / "hooks" / "hooks.json").write_text('{"hooks": {"Stop": [{"hooks": [{"type": "shell"}]}]}}'),
     "hooks/hooks.json: hooks.Stop[0].hooks[0]: hook handler type: expected one of command"),
    (lambda r: (r / "hooks" / "hooks.json").write_text('{"hooks": '),
     "hooks/hooks.json: not valid JSON"),
])
def test_a_broken_plugin_is_one_error_line_and_left_out(dirs, tmp_path, breakage, named):
    home, project = dirs
    root = demo_plugin(tmp_path / "plugs" / "demo")
    breakage(root)
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "hi", "--plugin-dir", str(root), "--plugin-dir", str(tmp_path / "nowhere")],
                         home, project, sim)
        first = json.dumps(sim.message_requests[0].body)
    assert out.returncode == 0, out.stderr
    errors = [ln for ln in out.stderr.splitlines() if "error: plugin:" in ln]
    assert len(errors) == 2, out.stderr
    assert f"{root}/{named}" in errors[0] and errors[0].endswith("the plugin is not loaded")
    assert f"--plugin-dir {tmp_path / 'nowhere'}: no such folder" in errors[1]
    assert "demo:check" not in first and not (project / "demo-hook-saw.txt").exists()


def install(home, name, marketplace="mkt"):
    """A plugin installed as Claude Code installs one: its files in the plugin cache, its entry
    in ~/.claude/plugins/installed_plugins.json (the version 2 shape)."""
    root = demo_plugin(home / ".claude" / "plugins" / "cache" / marketplace / name / "2.0.0", name)
    record = home / ".claude" / "plugins" / "installed_plugins.json"
    doc = json.loads(record.read_text()) if record.exists() else {"version": 2, "plugins": {}}
    doc["plugins"][f"{name}@{marketplace}"] = [{"scope": "user", "installPath": str(root), "version": "2.0.0",
                                                 "installedAt": "2026-01-01T00:00:00Z"}]
    record.write_text(json.dumps(doc))
    return root


def test_enabled_plugins_in_settings_choose_which_installed_plugins_load(dirs):
    pytest.importorskip("mcp")
    home, project = dirs
    alpha, _ = install(home, "alpha"), install(home, "beta")
    install(home, "gamma")  # installed, named nowhere: not loaded
    (home / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"alpha@mkt": True,
                                                                                    "beta@mkt": True}}))
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"enabledPlugins": {"beta@mkt": False}}))
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "/alpha:hello world", "--output-format", "stream-json", "--verbose"],
                         home, project, sim)
        first = sim.message_requests[0].body
    assert out.returncode == 0, out.stderr
    init = next(e for e in map(json.loads, out.stdout.splitlines()) if e.get("subtype") == "init")
    assert init["plugins"] == [{"name": "alpha", "path": str(alpha), "source": "alpha@mkt", "version": "2.0.0"}]
    assert sorted(init["slash_commands"]) == ["alpha:check", "alpha:hello"]
    assert "alpha:helper" in init["agents"] and not any(a.startswith(("beta:", "gamma:")) for a in init["agents"])
    tools = [t["name"] for t in first["tools"]]
    assert "mcp__plugin_alpha_tb__add" in tools and not any("beta" in t or "gamma" in t for t in tools)
    assert "beta:" not in json.dumps(first["messages"]) and f"HELLO from {alpha} to world" in last_user_text(
        sim.message_requests[0])
    assert (project / "alpha-hook-saw.txt").exists() and not (project / "beta-hook-saw.txt").exists()
    assert "error" not in out.stderr


def test_a_plugin_switched_on_but_not_installed_is_one_line(dirs):
    home, project = dirs
    install(home, "alpha")
    (home / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"nothere@mkt": True}}))
    with Simulator([{"text": "ok"}, {"text": "ok"}]) as sim:
        out = loopwright(["-p", "hi", "--bare"], home, project, sim)
        bare = out.stderr
        out = loopwright(["-p", "hi"], home, project, sim)
    assert out.returncode == 0, out.stderr
    [line] = [ln for ln in out.stderr.splitlines() if "plugin" in ln]
    assert line == ("loopwright: warning: plugin: enabledPlugins: nothere@mkt is switched on but not installed "
                    f"({home / '.claude' / 'plugins' / 'installed_plugins.json'} does not list it); it is not loaded")
    assert "plugin" not in bare


def test_a_project_switching_a_plugin_on_is_said_as_what_it_widens(dirs):
    home, project = dirs
    install(home, "alpha")
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps({"enabledPlugins": {"alpha@mkt": True}}))
    with Simulator([{"text": "ok"}]) as sim:
        out = loopwright(["-p", "/alpha:hello you"], home, project, sim)
    assert out.returncode == 0, out.stderr
    assert "project settings in effect" in out.stderr and "plugins alpha@mkt" in out.stderr


def keeper_plugin(root):
    """A plugin that keeps notes in its data folder: a command whose setup step appends to it, a
    hook that says where it is, in command text and in the environment."""
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "keeper"}))
    for folder in ("commands", "scripts", "hooks"):
        (root / folder).mkdir()
    (root / "commands" / "note.md").write_text(
        "---\ndescription: Keep a note\nallowed-tools: [\"Bash(${CLAUDE_PLUGIN_ROOT}/scripts/note.sh:*)\"]\n---\n"
        "Notes kept in ${CLAUDE_PLUGIN_DATA}:\n\n```!\n\"${CLAUDE_PLUGIN_ROOT}/scripts/note.sh\" $ARGUMENTS\n```\n")
    (root / "scripts" / "note.sh").write_text('#!/bin/sh\necho "$*" >> "$CLAUDE_PLUGIN_DATA/notes.txt"\n'
                                              'cat "$CLAUDE_PLUGIN_DATA/notes.txt"\n')
    (root / "scripts" / "note.sh").chmod(0o755)
    (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": "echo \"${CLAUDE_PLUGIN_DATA} $CLAUDE_PLUGIN_DATA\" > data-saw.txt"}]}]}}))
    return root


def test_a_plugins_data_folder_is_filled_in_set_and_kept_between_sessions(dirs, tmp_path):
    home, project = dirs
    root = keeper_plugin(tmp_path / "plugs" / "keeper")
    data = home / ".claude" / "plugins" / "data" / "keeper-inline"
    with Simulator([{"text": "ok"}, {"text": "ok"}]) as sim:
        one = loopwright(["-p", "/keeper:note buy milk", "--plugin-dir", str(root)], home, project, sim)
        two = loopwright(["-p", "/keeper:note call home", "--plugin-dir", str(root)], home, project, sim)
        second = last_user_text(sim.message_requests[1])
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert f"Notes kept in {data}:" in second and "buy milk\ncall home" in second
    assert (data / "notes.txt").read_text() == "buy milk\ncall home\n"
    assert (project / "data-saw.txt").read_text().split() == [str(data), str(data)]


def test_the_agent_sdks_init_lists_the_plugins_loaded(dirs, tmp_path):
    home, project = dirs
    root = keeper_plugin(tmp_path / "plugs" / "keeper")
    stdin = json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n"
    with Simulator([{"text": "ok"}]) as sim:
        env = {"HOME": str(home), "LOOPWRIGHT_HOME": str(home / ".lw"), "ANTHROPIC_API_KEY": "k",
               "ANTHROPIC_BASE_URL": sim.base_url}
        out = subprocess.run([sys.executable, "-m", "loopwright", "-p", "--input-format", "stream-json",
                              "--output-format", "stream-json", "--verbose", "--plugin-dir", str(root)],
                             input=stdin, env={**os.environ, **env}, cwd=project, capture_output=True, text=True,
                             timeout=60)
    assert out.returncode == 0, out.stderr
    init = next(e for e in map(json.loads, out.stdout.splitlines()) if e.get("subtype") == "init")
    assert init["plugins"] == [{"name": "keeper", "path": str(root), "source": "keeper@inline"}]


def test_a_plugins_mcp_server_gets_its_data_folder_filled_in(dirs, tmp_path):
    pytest.importorskip("mcp")
    home, project = dirs
    root = keeper_plugin(tmp_path / "plugs" / "keeper")
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"tb": {
        "command": sys.executable, "args": [str(TOOLBOX)], "env": {"TOOLBOX_LOG": "${CLAUDE_PLUGIN_DATA}/tb.log"}}}}))
    script = [{"tool_use": {"name": "mcp__plugin_keeper_tb__record", "input": {"note": "kept"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = loopwright(["-p", "keep it", "--plugin-dir", str(root), "--allowedTools", "mcp__plugin_keeper_tb__record"],
                         home, project, sim)
    assert out.returncode == 0, out.stderr
    assert (home / ".claude" / "plugins" / "data" / "keeper-inline" / "tb.log").read_text() == "kept\n"
