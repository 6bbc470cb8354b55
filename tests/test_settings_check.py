"""Settings checked like code: misspelt keys, events, handler types, modes and tool names are
reported with the file, the key path and the nearest valid name; a hook that can never fire as
written stops the run (exit 2); Claude Code's own names pass silently; `loopwright settings
check` says what was loaded from where. Driven through the CLI in a fresh HOME."""

import json
import os
import subprocess
import sys

import pytest

from loopwright.core.errors import UsageError
from loopwright.settings import load_settings
from loopwright.testing import Simulator

CLI = [sys.executable, "-m", "loopwright"]


@pytest.fixture
def dirs(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def cli(args, project, home, sim_url="http://127.0.0.1:9"):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "CLAUDE_"))}
    e.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".loopwright"), ANTHROPIC_BASE_URL=sim_url,
             ANTHROPIC_API_KEY="sk-test")
    return subprocess.run(CLI + args, capture_output=True, text=True, env=e, cwd=project, timeout=60)


def hook(matcher=None, kind="command"):
    handler = {"type": kind, "command": "touch ran"} if kind != "prompt" else {"type": kind, "prompt": "ok?"}
    return [{**({"matcher": matcher} if matcher is not None else {}), "hooks": [handler]}]


ERRORS = [  # (settings, the line that says what is wrong)
    ({"hooks": {"PreToolUs": hook("Bash")}},
     "hooks.PreToolUs: unknown hook event: these hooks would never run (did you mean PreToolUse?)"),
    ({"hooks": {"stop": hook()}}, "hooks.stop: unknown hook event: these hooks would never run (did you mean Stop?)"),
    ({"hooks": {"Stop": hook("Bash")}},
     "hooks.Stop[0].matcher: Stop takes no matcher: 'Bash' would be ignored and the hooks would run on every Stop"),
    ({"hooks": {"UserPromptSubmit": hook("Edit")}}, "hooks.UserPromptSubmit[0].matcher: UserPromptSubmit takes no"),
    ({"hooks": {"PreToolUse": hook("Bsh")}},
     "hooks.PreToolUse[0].matcher: 'Bsh' matches no known tool, so these hooks would never run (did you mean Bash?)"),
    ({"hooks": {"PostToolUse": hook("Wirte|Eddit")}}, "'Wirte|Eddit' matches no known tool"),
    ({"hooks": {"SessionStart": hook("startp")}},
     "hooks.SessionStart[0].matcher: 'startp' matches no known value, so these hooks would never run "
     "(did you mean startup?)"),
    ({"hooks": {"Stop": [{"hooks": [{"type": "comand", "command": "x"}]}]}},
     "hooks.Stop[0].hooks[0].type: expected one of command, prompt, http, agent, mcp_tool, got 'comand' "
     "(did you mean command?)"),
    ({"permissions": {"defaultMode": "acceptEdit"}},
     "permissions.defaultMode: expected one of default, acceptEdits, plan, dontAsk, bypassPermissions, auto (or "
     "manual), "
     "got 'acceptEdit' (did you mean acceptEdits?)"),
]


@pytest.mark.parametrize("settings, message", ERRORS)
def test_a_hook_that_cannot_fire_or_a_misspelt_name_is_an_error(dirs, settings, message):
    home, project = dirs
    path = write(project / ".claude/settings.json", settings)
    with pytest.raises(UsageError) as caught:
        load_settings(project, env={"HOME": str(home)})
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


@pytest.mark.parametrize("settings, message", [ERRORS[0], ERRORS[2]])
def test_an_error_stops_the_run_before_anything_runs(dirs, settings, message):
    home, project = dirs
    write(project / ".claude/settings.json", settings)
    with Simulator([{"text": "never"}]) as sim:
        out = cli(["-p", "hi"], project, home, sim.base_url)
        assert not sim.message_requests
    assert out.returncode == 2 and out.stdout == "" and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"loopwright: error: {project / '.claude/settings.json'}: ")
    assert message in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    assert not (project / "ran").exists()


WARNINGS = [
    ({"hook": {}}, "hook: unknown key, ignored (did you mean hooks?)"),
    ({"Model": "haiku"}, "Model: unknown key, ignored (did you mean model?)"),
    ({"permissions": {"alow": ["Bash"]}}, "permissions.alow: unknown key, ignored (did you mean allow?)"),
    ({"permissions": {"deny": ["Bassh(rm *)"]}},
     "permissions.deny[0]: 'Bassh(rm *)' names no known tool, so it never applies (did you mean Bash?)"),
    ({"hooks": {"PreToolUse": hook("Bash|Eddit")}}, "hooks.PreToolUse[0].matcher: Eddit: no such tool (did you mean Edit?)"),
    ({"hooks": {"PermissionRequest": hook("Bash")}},
     "hooks.PermissionRequest: Claude Code fires this event, loopwright does not (yet): these hooks will not run"),
    ({"permissions": {"defaultMode": "delegate"}},
     "permissions.defaultMode: ignored: loopwright has no delegate mode; the default mode applies"),
    ({"permissions": {"defaultMode": "auto"}},
     "permissions.defaultMode: ignored: auto comes only from your user settings or --permission-mode, never from "
     "a project"),
]


@pytest.mark.parametrize("settings, message", WARNINGS)
def test_unknown_names_are_warnings_with_the_nearest_valid_one(dirs, settings, message):
    home, project = dirs
    path = write(project / ".claude/settings.json", settings)
    assert [str(f) for f in load_settings(project, env={"HOME": str(home)}).findings] == [f"{path}: {message}"]


def test_a_warning_is_one_stderr_line_and_the_run_goes_on(dirs):
    home, project = dirs
    write(project / ".claude/settings.json", {"hook": {}, "permissions": {"deny": ["Bassh(rm *)"]}})
    with Simulator([{"text": "answered"}]) as sim:
        out = cli(["-p", "hi"], project, home, sim.base_url)
    assert out.returncode == 0 and out.stdout.strip() == "answered", out.stderr
    assert out.stderr.splitlines() == [
        "loopwright: warning: .claude/settings.json: hook: unknown key, ignored (did you mean hooks?)",
        "loopwright: warning: .claude/settings.json: permissions.deny[0]: 'Bassh(rm *)' names no known tool, so it "
        "never applies (did you mean Bash?)"]


def test_claude_code_names_pass_silently(dirs):
    home, project = dirs
    write(home / ".claude/settings.json", {
        "$schema": "https://json.schemastore.org/claude-code-settings.json", "statusLine": {"type": "command",
        "command": "~/.claude/statusline.sh"}, "includeCoAuthoredBy": False, "cleanupPeriodDays": 20,
        "enabledPlugins": {"x@y": True}, "theme": "dark", "alwaysThinkingEnabled": True, "outputStyle": "Explanatory",
        "permissions": {"allow": ["WebSearch", "mcp__github__get_issue", "Skill(x)", "TodoWrite", "Read(~/notes/**)"],
                        "deny": ["WebFetch(domain:evil.example)", "Agent(Explore)"], "disableBypassPermissionsMode": "disable"},
        "hooks": {"PreToolUse": hook("Bash|Edit|MultiEdit|mcp__github__.*"), "Stop": hook("") + hook("*"),
                  "SessionStart": hook("startup|resume"), "PreCompact": hook("auto"), "Notification": hook("idle_prompt"),
                  "PostToolUse": hook("Edit.*")},
        "env": {"BASH_DEFAULT_TIMEOUT_MS": "1000"}, "sandbox": {"enabled": False}})
    with Simulator([{"text": "quiet"}]) as sim:
        out = cli(["-p", "hi"], project, home, sim.base_url)
    assert out.returncode == 0 and out.stdout.strip() == "quiet"
    assert out.stderr == "", out.stderr


def test_settings_check_says_what_came_from_where(dirs):
    home, project = dirs
    write(home / ".claude/settings.json", {"model": "haiku", "permissions": {"allow": ["Read"]}, "theme": "dark"})
    write(project / ".claude/settings.json", {"model": "sonnet", "permissions": {"allow": ["Bash(npm test)"]},
                                              "env": {"ANTHROPIC_BASE_URL": "http://x", "APP": "1"},
                                              "hook": {}, "hooks": {"PreToolUs": hook()}})
    out = cli(["settings", "check"], project, home)
    assert out.returncode == 2, out.stderr  # an error: the run would not start
    text = out.stdout
    user, proj = str(home / ".claude/settings.json"), ".claude/settings.json"
    assert f"  user     {user}" in text and f"  project  {proj}" in text
    assert f'  model = "sonnet"  <- {proj}' in text  # the higher file wins
    assert f'  permissions.allow = ["Read", "Bash(npm test)"]  <- {user}, {proj}' in text  # lists add up
    assert f'  env.APP = "1"  <- {proj}' in text and "env.ANTHROPIC_BASE_URL =" not in text
    assert f"  {proj}: env.ANTHROPIC_BASE_URL: ignored: it names a model API endpoint" in text
    assert f"  {proj}: hook: unknown key, ignored (did you mean hooks?)" in text
    assert f"  {proj}: hooks.PreToolUs: unknown hook event" in text
    assert "at the terminal: not asked yet" in text
    report = json.loads(cli(["settings", "check", "--json"], project, home).stdout)
    assert [f["scope"] for f in report["files"]] == ["user", "project"]
    assert {"key": "model", "value": "sonnet", "from": [str(project / ".claude/settings.json")]} in report["keys"]
    assert len(report["errors"]) == 1 and len(report["refused"]) == 1 and len(report["warnings"]) == 1
    (project / ".claude/settings.json").unlink()
    out = cli(["settings", "check"], project, home)
    assert out.returncode == 0 and "No problems found." in out.stdout


def test_settings_check_reports_a_broken_file_and_keeps_going(dirs):
    home, project = dirs
    (project / ".claude").mkdir()
    (project / ".claude/settings.json").write_text("{not json")
    write(home / ".claude/settings.json", {"model": "haiku"})
    out = cli(["settings", "check"], project, home)
    assert out.returncode == 2 and "invalid JSON at line 1 column 2" in out.stdout
    assert '  model = "haiku"' in out.stdout


def test_many_errors_name_the_first_and_count_the_rest(dirs):
    home, project = dirs
    write(project / ".claude/settings.json", {"hooks": {"PreToolUs": hook(), "Stop": hook("Bash")}})
    with pytest.raises(Exception, match=r"PreToolUs: unknown hook event.*\(and 1 more; `loopwright settings check`"):
        load_settings(project, env={"HOME": str(home)})
    s = load_settings(project, env={"HOME": str(home)}, strict=False)
    assert [f.level for f in s.findings] == ["error", "error"]


def test_terminal_escapes_in_settings_are_shown_harmless(dirs):
    home, project = dirs
    write(project / ".claude/settings.json", {"\x1b]0;owned\x07hook": {}})
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "hi"], project, home, sim.base_url)
    assert "\x1b" not in out.stderr and "\\x1b]0;owned\\x07hook: unknown key" in out.stderr


def test_a_misspelt_mode_flag_names_the_nearest_mode(dirs):
    home, project = dirs
    out = cli(["-p", "hi", "--permission-mode", "acceptEdit"], project, home)
    assert out.returncode == 2 and out.stderr.strip().endswith("got 'acceptEdit' (did you mean acceptEdits?)")


def test_permission_denied_hooks_are_checked_as_loopwrights_own_tool_event(dirs):
    """Auto mode fires PermissionDenied, so its hooks run: no "will not run" warning, and its
    matcher is checked against tool names like PreToolUse's."""
    home, project = dirs
    path = write(project / ".claude/settings.json", {"hooks": {"PermissionDenied": hook("Bash|Eddit")}})
    assert [str(f) for f in load_settings(project, env={"HOME": str(home)}).findings] == [
        f"{path}: hooks.PermissionDenied[0].matcher: Eddit: no such tool (did you mean Edit?)"]
