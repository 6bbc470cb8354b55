"""Sessions a person can find again (issue 23 item 5): `loopwright sessions [--all] [--json]`
lists them newest first with id, folder, start, turns, cost, outcome and first prompt; `-c`
with nothing to continue says so; and every early error under `--output-format json` or
`stream-json` still prints a result object."""

import json

import pytest
from test_goal_session import cli, env  # noqa: F401  (env is a fixture)

from loopwright.testing import Simulator


def run(env, cwd, prompt, script, *flags):
    with Simulator(script) as sim:
        out = cli(["-p", prompt, "--output-format", "json", *flags], env, cwd, sim)
    return json.loads(out.stdout)


@pytest.fixture
def folders(tmp_path, env):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    first = run(env, a, "first prompt in a", [{"text": "done"}])
    second = run(env, a, "second prompt in a,\nwith a second line", [{"tool_use": {"name": "Bash", "input": {
        "command": "true"}}, "repeat": -1}], "--max-turns", "2", "--allowedTools", "Bash")
    third = run(env, b, "prompt in b", [{"text": "ok"}])
    return a, b, first, second, third


def test_sessions_of_this_folder_newest_first(folders, env):
    a, _, first, second, _ = folders
    out = cli(["sessions", "--json"], env, a)
    rows = json.loads(out.stdout)
    assert [r["id"] for r in rows] == [second["session_id"], first["session_id"]]
    newest = rows[0]
    assert newest["folder"] == str(a) and newest["turns"] == 2 and newest["outcome"] == "max_turns"
    assert newest["first_prompt"] == "second prompt in a, with a second line"
    assert newest["cost_usd"] == pytest.approx(second["total_cost_usd"]) and newest["started"].startswith("20")
    assert rows[1]["outcome"] == "completed" and rows[1]["turns"] == 1
    text = cli(["sessions"], env, a).stdout.splitlines()
    assert len(text) == 2 and text[0].startswith(second["session_id"]) and "max_turns" in text[0]


def test_all_folders_and_an_empty_folder(folders, env, tmp_path):
    a, b, *_ = folders
    rows = json.loads(cli(["sessions", "--all", "--json"], env, a).stdout)
    assert sorted(r["folder"] for r in rows) == sorted([str(a), str(a), str(b)])
    assert "  " + str(b) in cli(["sessions", "--all"], env, a).stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    out = cli(["sessions"], env, empty)
    assert out.returncode == 0 and out.stdout == "" and f"no sessions in {empty}" in out.stderr
    assert cli(["sessions", "--json"], env, empty).stdout.strip() == "[]"


def test_a_damaged_transcript_is_still_listed(folders, env):
    a, _, first, *_ = folders
    [path] = list((env_home(env) / "projects").glob(f"*/{first['session_id']}.jsonl"))
    with open(path, "ab") as f:
        f.write(b'{"type": "user", "message": {"role": "user", "content": "cut off\n')
    rows = {r["id"]: r for r in json.loads(cli(["sessions", "--json"], env, a).stdout)}
    assert rows[first["session_id"]]["damaged_lines"] == 1 and rows[first["session_id"]]["turns"] == 1


def env_home(env):
    from pathlib import Path

    return Path(env["LOOPWRIGHT_HOME"])


def test_continue_with_nothing_to_continue_says_so(tmp_path, env):
    out = cli(["-p", "-c", "go on"], env, tmp_path)
    assert out.returncode == 1 and "No conversation found to continue" in out.stderr and out.stdout == ""
    out = cli(["-p", "-c", "go on", "--output-format", "json"], env, tmp_path)
    result = json.loads(out.stdout)
    assert result["is_error"] and result["terminal_reason"] == "startup_error"
    assert result["errors"] == ["No conversation found to continue"]


@pytest.mark.parametrize("args", [
    ["-p", "hi", "--output-format", "json", "--max-turns", "0"],
    ["-p", "hi", "--output-format=stream-json", "--verbos"],
    ["-p", "hi", "--output-format", "json", "--model", "sonet"],
])
def test_every_early_error_prints_a_result_object(tmp_path, env, args):
    out = cli(args, env, tmp_path)
    [line] = out.stdout.splitlines()
    result = json.loads(line)
    assert out.returncode == 2 and result["type"] == "result" and result["is_error"]
    assert result["errors"][0] in out.stderr


def test_a_subcommand_error_prints_no_result_object(tmp_path, env):
    out = cli(["sessions", "--bogus", "--output-format", "json"], env, tmp_path)
    assert out.returncode == 2 and out.stdout == ""
