"""Credentials stay with the harness: the Bash tool, a background shell, hooks and goal checks
see no API key of loopwright's own — unless `--pass-env NAME` or settings `env` names it. Real
processes (the CLI in a fresh HOME against the simulator); each child writes `env` to a file."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.core.environ import CREDENTIALS, child_env
from loopwright.testing import Simulator

CLI = [sys.executable, "-m", "loopwright"]
SECRET = "sk-ant-secret-0123456789"
OPENAI_SECRET = "sk-openai-secret-9876543210"
JUDGE = {"system_contains": "You decide whether an agent has met its goal"}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "home").mkdir()
    p = tmp_path / "project"
    p.mkdir()
    return p


def cli(args, project, sim, settings=None):
    home = project.parent / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOPWRIGHT_"))}
    env.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".lw"), ANTHROPIC_BASE_URL=sim.base_url,
               ANTHROPIC_API_KEY=SECRET, OPENAI_API_KEY=OPENAI_SECRET)
    if settings is not None:
        args = [*args, "--settings", json.dumps(settings)]
    return subprocess.run(CLI + args, capture_output=True, text=True, env=env, cwd=project, timeout=60)


def seen(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def bash(command, **extra):
    return {"tool_use": {"name": "Bash", "input": {"command": command, **extra}}}


@pytest.mark.parametrize("pass_env", [False, True])
def test_the_bash_tool_sees_no_key_unless_passed(project, pass_env):
    with Simulator([bash("env | grep -i key > keys.txt; env > env.txt"), {"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--allowedTools", "Bash", *(["--pass-env", "ANTHROPIC_API_KEY"] if pass_env else [])],
                  project, sim)
    assert out.returncode == 0, out.stderr
    env = seen(project / "env.txt")
    assert (SECRET in (project / "keys.txt").read_text()) is pass_env
    assert (env.get("ANTHROPIC_API_KEY") == SECRET) is pass_env
    assert "OPENAI_API_KEY" not in env and OPENAI_SECRET not in (project / "env.txt").read_text()
    assert env["HOME"] and env["PATH"]  # the rest of the environment is there


def test_a_background_shell_sees_no_key(project):
    # the session ends (and its background shells with it) only after a foreground call has seen
    # the file finished: a bounded wait inside the run, not a race with the kill
    script = [bash("env > bg.tmp; mv bg.tmp bg.txt", run_in_background=True),
              bash("for i in $(seq 300); do [ -f bg.txt ] && break; sleep 0.1; done"), {"text": "started"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--allowedTools", "Bash"], project, sim)
    assert out.returncode == 0, out.stderr
    text = (project / "bg.txt").read_text()
    assert "PATH=" in text and SECRET not in text and OPENAI_SECRET not in text


@pytest.mark.parametrize("pass_env", [False, True])
def test_hooks_see_no_key_unless_passed(project, pass_env):
    hooks = {event: [{"hooks": [{"type": "command", "command": f"env > {event}.txt"}]}]
             for event in ("SessionStart", "PreToolUse", "Stop")}
    with Simulator([bash("true"), {"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--allowedTools", "Bash", *(["--pass-env", "OPENAI_API_KEY"] if pass_env else [])],
                  project, sim, {"hooks": hooks})
    assert out.returncode == 0, out.stderr
    for event in hooks:
        env = seen(project / f"{event}.txt")
        assert "ANTHROPIC_API_KEY" not in env and env["CLAUDE_PROJECT_DIR"], event
        assert (env.get("OPENAI_API_KEY") == OPENAI_SECRET) is pass_env, event


def test_a_goal_check_sees_no_key(project):
    script = {"rules": [{"match": JUDGE, "responses": [{"text": '{"ok": true, "reason": "checked"}'}]},
                        {"responses": [{"text": "done"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "--goal", "the check ran", "--check", "env > check.txt", "--output-format", "json"],
                  project, sim)
    assert json.loads(out.stdout)["terminal_reason"] == "goal_met", out.stderr
    text = (project / "check.txt").read_text()
    assert "PATH=" in text and SECRET not in text and OPENAI_SECRET not in text


def test_settings_env_that_names_a_key_gives_it(project):
    """What your own settings' `env` sets explicitly is given, credentials too."""
    with Simulator([bash("env > env.txt"), {"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--allowedTools", "Bash"], project, sim, {"env": {"OPENAI_API_KEY": "given-on-purpose"}})
    assert out.returncode == 0, out.stderr
    env = seen(project / "env.txt")
    assert env["OPENAI_API_KEY"] == "given-on-purpose" and "ANTHROPIC_API_KEY" not in env


def test_pass_env_needs_a_variable_name(project):
    with Simulator([{"text": "never"}]) as sim:
        out = cli(["-p", "go", "--pass-env", "A=B"], project, sim)
    assert out.returncode == 2 and "--pass-env: expected a variable name" in out.stderr


def test_child_env_function():
    base = {"ANTHROPIC_API_KEY": "a", "ANTHROPIC_AUTH_TOKEN": "b", "OPENAI_API_KEY": "c", "PATH": "/bin", "MINE": "m"}
    assert child_env(base) == {"PATH": "/bin", "MINE": "m"}
    assert child_env(base, keep=["OPENAI_API_KEY"], hide=["MINE"]) == {"PATH": "/bin", "OPENAI_API_KEY": "c"}
    assert child_env(base, add={"ANTHROPIC_API_KEY": "explicit"})["ANTHROPIC_API_KEY"] == "explicit"


def test_every_key_a_provider_reads_is_kept_from_children():
    """A provider that reads a new key variable must list it in CREDENTIALS."""
    providers = Path(__file__).resolve().parents[1] / "src" / "loopwright" / "providers"
    names = set()
    for path in providers.glob("*.py"):
        names |= set(re.findall(r"""env\.get\(["']([A-Z0-9_]*(?:KEY|TOKEN|SECRET)[A-Z0-9_]*)["']""", path.read_text()))
    assert names and names <= CREDENTIALS, names - CREDENTIALS


def test_a_change_to_this_process_environment_reaches_the_next_run(project, monkeypatch):
    """The decoded environment is reused between runs only while it is unchanged: a variable set,
    changed or removed before a run is what that run's tools see."""
    import anyio

    from loopwright.agent import Agent
    from loopwright.core.ports import ToolContext
    from loopwright.permissions.decide import PermissionRules
    from loopwright.providers.anthropic import AnthropicModel
    from loopwright.tools import tool

    seen_values = []

    @tool(read_only=True)
    async def look(context: ToolContext) -> str:
        """Say what the variable is."""
        seen_values.append(context.env.get("LW_TEST_CHANGES"))
        return "looked"

    call = {"tool_use": {"name": "look", "input": {}}}
    with Simulator([call, {"text": "done"}] * 3) as sim:
        for value in ("one", "two", None):
            if value is None:
                monkeypatch.delenv("LW_TEST_CHANGES")
            else:
                monkeypatch.setenv("LW_TEST_CHANGES", value)
            agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="k"), cwd=project, tools=[look],
                          permissions=PermissionRules(allow=("look",)), system_prompt="You look.")

            async def run(agent=agent):
                async with agent.open() as running:
                    return await running.prompt("go")

            assert anyio.run(run).result == "done"
    assert seen_values == ["one", "two", None]
