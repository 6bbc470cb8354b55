"""Settings files: discovery, merge order, `--bare`, `--settings` (file or inline JSON),
validation errors that name file, key path and expectation, flags over settings."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.core.errors import UsageError
from loopwright.policy.stop import Limits
from loopwright.settings import default_limits, load_settings, merge, permission_rules, settings_files, stop_block_cap
from loopwright.testing import Simulator

CLI = [sys.executable, "-m", "loopwright"]


@pytest.fixture
def dirs(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project, {"HOME": str(home)}


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def layer(name):
    """A settings file that says who it is in every kind of key."""
    return {"model": name, "permissions": {"allow": [f"Bash({name})"], "defaultMode": "plan"},
            "env": {"WHO": name, name.replace("-", "_"): "1"},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"echo {name}"}]}]}}


NAMES = ["user-claude", "user-lw", "project-claude", "project-lw", "local-claude", "local-lw"]


def all_layers(home, project):
    paths = [home / ".claude/settings.json", home / ".loopwright/settings.json", project / ".claude/settings.json",
             project / ".loopwright/settings.json", project / ".claude/settings.local.json",
             project / ".loopwright/settings.local.json"]
    for name, path in zip(NAMES, paths):
        write(path, layer(name))
    return paths


def test_merge_order_lowest_to_highest(dirs):
    home, project, env = dirs
    paths = all_layers(home, project)
    s = load_settings(project, env=env, settings=json.dumps(layer("flag")))
    assert s.sources == (*map(str, paths), "--settings")
    assert s.model == "flag" and s.env["WHO"] == "flag"  # scalars: the highest wins
    assert s.allow == tuple(f"Bash({n})" for n in [*NAMES, "flag"])  # lists add up, in order
    assert all(s.env[n.replace("-", "_")] == "1" for n in NAMES)  # objects merge key by key
    assert [g["hooks"][0]["command"] for g in s.hooks["Stop"]] == [f"echo {n}" for n in [*NAMES, "flag"]]


def test_each_layer_beats_the_ones_below(dirs):
    home, project, env = dirs
    paths = all_layers(home, project)
    for name, path in reversed(list(zip(NAMES, paths))):
        assert load_settings(project, env=env).model == name
        path.unlink()
    assert load_settings(project, env=env).data == {}


def test_loopwright_home_moves_the_user_file(dirs, tmp_path):
    home, project, env = dirs
    write(home / ".loopwright/settings.json", {"model": "ignored"})
    write(tmp_path / "elsewhere/settings.json", {"model": "moved"})
    s = load_settings(project, env=env | {"LOOPWRIGHT_HOME": str(tmp_path / "elsewhere")})
    assert s.model == "moved"
    assert settings_files(project, env | {"LOOPWRIGHT_HOME": "/x"})[1] == Path("/x/settings.json")


def test_bare_reads_only_the_flag(dirs):
    home, project, env = dirs
    all_layers(home, project)
    assert load_settings(project, env=env, bare=True).data == {}
    s = load_settings(project, env=env, bare=True, settings='{"model": "only-me"}')
    assert s.model == "only-me" and s.sources == ("--settings",)


def test_settings_flag_as_a_file(dirs, tmp_path):
    home, project, env = dirs
    f = write(tmp_path / "extra.json", {"disableAllHooks": True, "sandbox": {"enabled": True, "network": {"x": 1}}})
    s = load_settings(project, env=env, settings=str(f))
    assert s.disable_all_hooks and s.sandbox == {"enabled": True, "network": {"x": 1}} and s.sources == (str(f),)
    with pytest.raises(UsageError, match="no file 'missing.json'"):
        load_settings(project, env=env, settings="missing.json")


def test_unknown_keys_are_kept_not_errors(dirs):
    home, project, env = dirs
    agent_hook = {"hooks": [{"type": "agent", "prompt": "x"}]}
    write(project / ".claude/settings.json", {"statusLine": {"type": "command"}, "includeCoAuthoredBy": False,
                                              "hooks": {"TeammateIdle": [agent_hook]}})
    s = load_settings(project, env=env)
    assert s.data["statusLine"] == {"type": "command"} and "TeammateIdle" in s.hooks


def test_the_same_file_twice_is_read_once(tmp_path):
    write(tmp_path / ".claude/settings.json", {"permissions": {"allow": ["Read"]}})
    s = load_settings(tmp_path, env={"HOME": str(tmp_path)})  # run in $HOME: user and project coincide
    assert len(s.sources) == 1 and s.allow == ("Read",)


def test_merge_rule():
    assert merge({"a": 1, "l": [1, 2], "o": {"x": 1, "y": [1]}}, {"a": 2, "l": [2, 3], "o": {"y": [2]}}) == \
        {"a": 2, "l": [1, 2, 3], "o": {"x": 1, "y": [1, 2]}}


INVALID = [
    ('{"hooks": {"PreToolUse": [{"hooks": [{"type": "shell", "command": "x"}]}]}}',
     "hooks.PreToolUse[0].hooks[0].type: expected one of command, prompt, http, agent, mcp_tool, got 'shell'"),
    ('{"hooks": {"PreToolUse": [{"hooks": [{"command": "x"}]}]}}',
     "hooks.PreToolUse[0].hooks[0].type: required key missing"),
    ('{"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}', "hooks.Stop[0].hooks[0].command: required key missing"),
    ('{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": ["a"]}]}]}}',
     'hooks.Stop[0].hooks[0].command: expected a string, got ["a"]'),
    ('{"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "p", "timeout": -1}]}]}}',
     "hooks.Stop[0].hooks[0].timeout: expected a number above 0, got -1"),
    ('{"hooks": {"Stop": [{"hooks": [{"type": "http"}]}]}}', "hooks.Stop[0].hooks[0].url: required key missing"),
    ('{"hooks": {"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}}',
     "hooks.PreToolUse[0].matcher: expected a valid regular expression"),
    ('{"hooks": {"Stop": {"hooks": []}}}', "hooks.Stop: expected a list"),
    ('{"permissions": {"allow": "Bash"}}', 'permissions.allow: expected a list, got "Bash"'),
    ('{"permissions": {"defaultMode": "yolo"}}', "permissions.defaultMode: expected one of default, acceptEdits"),
    ('{"env": {"PORT": 8080}}', "env.PORT: expected a string, got 8080"),
    ('{"disableAllHooks": "yes"}', 'disableAllHooks: expected true or false, got "yes"'),
    ('{"model": 5}', "model: expected a string, got 5"),
    ('{"sandbox": {"enabled": "on"}}', 'sandbox.enabled: expected true or false, got "on"'),
    ('[1, 2]', "expected a JSON object at the top level, got list"),
    ('{"model": "x",}', "invalid JSON at line 1 column 15"),
]


@pytest.mark.parametrize("text,message", INVALID)
def test_invalid_settings_name_file_key_and_expectation(dirs, text, message):
    home, project, env = dirs
    path = write(project / ".claude/settings.json", text)
    with pytest.raises(UsageError) as caught:
        load_settings(project, env=env)
    line = str(caught.value)
    assert line.startswith(f"{path}: ") and message in line and "\n" not in line
    assert caught.value.exit_code == 2


def cli(args, cwd, home, sim_url=None, env=None, stdin=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "CLAUDE_"))}
    e.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".loopwright"))
    if sim_url:
        e.update(ANTHROPIC_BASE_URL=sim_url, ANTHROPIC_API_KEY="sk-test")
    e.update(env or {})
    return subprocess.run(CLI + args, capture_output=True, text=True, env=e, cwd=cwd, timeout=60, input=stdin)


def test_cli_invalid_settings_is_one_line_and_exit_2(dirs):
    home, project, _ = dirs
    write(project / ".loopwright/settings.json", {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": 1}]}]}})
    out = cli(["-p", "hi"], project, home)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        f"loopwright: error: {project / '.loopwright/settings.json'}: hooks.Stop[0].hooks[0].command: "
        "expected a string, got 1"]
    out = cli(["-p", "hi", "--bare", "--settings", '{"permissions": {"deny": "Bash"}}'], project, home)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr == 'loopwright: error: --settings: permissions.deny: expected a list, got "Bash"\n'
    with Simulator([{"text": "fine"}]) as sim:
        out = cli(["-p", "hi", "--bare"], project, home, sim.base_url)  # --bare never reads the bad file
    assert out.returncode == 0 and out.stdout.strip() == "fine"


def test_cli_flags_win_over_settings_and_rules_add_up(dirs):
    home, project, _ = dirs
    write(home / ".claude/settings.json", {"model": "haiku", "permissions": {"allow": ["Bash"], "deny": ["Grep"]}})
    script = [{"tool_use": {"name": "Bash", "input": {"command": "touch marker"}}}, {"text": "ok"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--disallowedTools", "Glob"], project, home, sim.base_url)
        bodies = [r.body for r in sim.message_requests]
    assert out.returncode == 0, out.stderr
    assert bodies[0]["model"] == "claude-haiku-4-5"  # settings model when no flag
    offered = {t["name"] for t in bodies[0]["tools"]}
    assert {"Read", "Bash"} <= offered and not {"Grep", "Glob"} & offered  # deny rules add up
    assert (project / "marker").exists()  # the settings' allow rule
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--model", "opus", "--permission-mode", "plan", "--output-format", "stream-json",
                   "--verbose"], project, home, sim.base_url)
        assert sim.message_requests[0].body["model"] == "claude-opus-5-5"
    init = json.loads(out.stdout.splitlines()[0])
    assert init["permissionMode"] == "plan"


def test_cli_settings_default_mode_and_env(dirs):
    home, project, _ = dirs
    settings = {"permissions": {"defaultMode": "plan"}, "env": {"ANTHROPIC_MODEL": "haiku", "FROM_SETTINGS": "yes"}}
    script = [{"tool_use": {"name": "Bash", "input": {"command": "echo $FROM_SETTINGS"}}}, {"text": "ok"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--settings", json.dumps(settings), "--output-format", "stream-json", "--verbose",
                   "--allowedTools", "Bash"], project, home, sim.base_url)
        bodies = [r.body for r in sim.message_requests]
    assert out.returncode == 0, out.stderr
    assert bodies[0]["model"] == "claude-haiku-4-5"  # env from settings reaches the API client
    assert json.loads(out.stdout.splitlines()[0])["permissionMode"] == "plan"
    assert bodies[1]["messages"][-1]["content"][0]["content"].strip() == "yes"  # and the tools


def test_settings_without_files_never_imports_pydantic(dirs):
    home, project, _ = dirs
    code = ("import sys; from loopwright.settings import load_settings; s = load_settings(); "
            "print('pydantic' in sys.modules, s.data)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=project,
                         env={**os.environ, "HOME": str(home), "LOOPWRIGHT_HOME": str(home / "lw")})
    assert out.stdout.split() == ["False", "{}"], out.stderr


def test_stop_block_cap_from_the_environment():
    assert stop_block_cap({}) is None
    assert stop_block_cap({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "3"}) == 3
    assert stop_block_cap({"LOOPWRIGHT_STOP_HOOK_BLOCK_CAP": "2", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "3"}) == 2
    assert stop_block_cap({"LOOPWRIGHT_STOP_HOOK_BLOCK_CAP": "0"}) > 10**9  # 0: no cap
    with pytest.raises(UsageError, match="LOOPWRIGHT_STOP_HOOK_BLOCK_CAP: expected a whole number"):
        stop_block_cap({"LOOPWRIGHT_STOP_HOOK_BLOCK_CAP": "many"})
    assert default_limits({}) == Limits()
    capped = default_limits({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": "4"}, max_turns=3)
    assert capped == Limits(max_turns=3, stop_block_cap=4)


def test_permission_rules_compose_mode_and_rules(dirs):
    home, project, env = dirs
    write(home / ".claude/settings.json", {"permissions": {"allow": ["Grep"], "ask": ["Write"],
                                                           "additionalDirectories": ["../shared"]}})
    write(project / ".claude/settings.json", {"permissions": {"allow": ["Read", "Edit(/src/**)"],
                                                              "deny": ["Bash(rm *)"], "defaultMode": "acceptEdits",
                                                              "additionalDirectories": ["vendor"]}})
    s = load_settings(project, env=env)
    rules = permission_rules(s, allow=("Bash",), deny=("Glob",))
    assert rules.mode == "acceptEdits" and rules.deny == ("Bash(rm *)", "Glob") and rules.ask == ("Write",)
    # a file's `/path` rules are read against that project's folder
    assert rules.allow == ("Grep", "Read", f"Edit(/{project.resolve()}/src/**)", "Bash")
    assert rules.additional_dirs == ("../shared", "vendor")
    assert permission_rules(s, mode="manual").mode == "default"
    write(project / ".claude/settings.local.json", {"permissions": {"allow": ["Bash(("]}})
    with pytest.raises(UsageError, match=r"settings.local.json: permissions.allow: 'Bash\(\(' "):
        permission_rules(load_settings(project, env=env))
