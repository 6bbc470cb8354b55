"""A headless run's denials reach the person (issue 23 item 3): in `-p` text mode each refused
tool call is one stderr line (tool, target, why, what would allow it), and the result's
`warnings` counts them in every format, so a run that was refused never looks clean."""

import json

from test_goal_session import cli, env  # noqa: F401  (env is a fixture)

from loopwright.testing import Simulator

SCRIPT = [{"tool_use": {"name": "Write", "input": {"file_path": "out.txt", "content": "x"}}},
          {"tool_use": {"name": "Bash", "input": {"command": "touch made-by-bash"}}},
          {"text": "I could not write it."}]


def test_each_denial_is_one_stderr_line_in_text_mode(tmp_path, env):
    with Simulator(SCRIPT) as sim:
        out = cli(["-p", "write out.txt"], env, tmp_path, sim)
    assert out.returncode == 0 and out.stdout.strip() == "I could not write it."
    lines = [ln for ln in out.stderr.splitlines() if "denied" in ln]
    assert lines == [
        "loopwright: denied Write(out.txt): Write is not allowed in default mode without a rule; "
        "to allow it: --permission-mode acceptEdits",
        "loopwright: denied Bash(touch made-by-bash): `touch made-by-bash` is not allowed by a rule (`touch` is "
        'not known to only read); to allow it: --allowedTools "Bash(touch made-by-bash *)"'], out.stderr
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "made-by-bash").exists()


def test_the_warnings_count_the_denials(tmp_path, env):
    with Simulator(SCRIPT) as sim:
        out = cli(["-p", "write out.txt", "--output-format", "json"], env, tmp_path, sim)
    result = json.loads(out.stdout)
    assert result["warnings"] == ["2 tool call(s) were denied permission (Write, Bash); see permission_denials"]
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Write", "Bash"]
    assert set(result["permission_denials"][0]) == {"tool_name", "tool_use_id", "tool_input"}  # Claude Code's shape
    assert "denied Write" not in out.stderr  # json mode: the result says it


def test_a_hook_denial_names_the_hook(tmp_path, env):
    hook = tmp_path / "no.sh"
    hook.write_text('#!/bin/sh\necho \'{"decision": "block", "reason": "writes are frozen"}\'\n')
    hook.chmod(0o755)
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Write", "hooks": [{"type": "command", "command": str(hook)}]}]}}))
    with Simulator(SCRIPT[:1] + SCRIPT[2:]) as sim:
        out = cli(["-p", "write out.txt", "--permission-mode", "acceptEdits"], env, tmp_path, sim)
    assert "loopwright: denied Write(out.txt): a PreToolUse hook blocked it: writes are frozen" in out.stderr, out.stderr


def test_a_clean_run_has_no_denial_lines_or_warnings(tmp_path, env):
    with Simulator([{"text": "fine"}]) as sim:
        out = cli(["-p", "hi", "--output-format", "json"], env, tmp_path, sim)
    assert json.loads(out.stdout)["warnings"] == [] and "denied" not in out.stderr
