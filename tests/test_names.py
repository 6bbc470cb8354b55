"""Names a newcomer types are checked (issue 23 item 4): a model name a letter or two from a
known one, or another provider's, is refused with the name meant (`--allow-unknown-model` sends
it anyway); a new, far-off name passes with one warning and reaches the API; a one-word prompt
that is a slip of a subcommand is refused with the command meant; flags are spelled in full,
and an unknown one names the flag meant."""

import json

import pytest
from test_goal_session import cli, env  # noqa: F401  (env is a fixture)

from loopwright.policy.names import check_model_name, edits, nearest
from loopwright.testing import Simulator


@pytest.mark.parametrize("flags,expected", [
    (["--model", "sonet"], "--model: unknown model 'sonet'; did you mean 'sonnet'?"),
    (["--model", "claude-opsu-5"], "--model: unknown model 'claude-opsu-5'; did you mean 'claude-opus-5'?"),
    (["--fallback-model", "haiku,sonet"], "--fallback-model: unknown model 'sonet'; did you mean 'sonnet'?"),
    (["--goal", "x exists", "--goal-model", "hiaku"], "--goal-model: unknown model 'hiaku'; did you mean 'haiku'?"),
    (["--model", "gpt-4o"], "use openai:gpt-4o for OpenAI, or openai-compatible:BASE_URL#gpt-4o"),
])
def test_a_likely_typo_or_a_foreign_model_is_refused_before_any_request(tmp_path, env, flags, expected):
    with Simulator([{"text": "never"}]) as sim:
        out = cli(["-p", "hi", *flags], env, tmp_path, sim)
        assert sim.message_requests == []
    assert out.returncode == 2 and expected in out.stderr and "--allow-unknown-model" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_allow_unknown_model_sends_it_as_given(tmp_path, env):
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "hi", "--model", "sonet", "--allow-unknown-model", "--output-format", "json"], env, tmp_path,
                  sim)
        assert sim.message_requests[0].body["model"] == "sonet"
    assert json.loads(out.stdout)["result"] == "ok" and "sent as given (--allow-unknown-model)" in out.stderr


def test_a_new_far_off_name_passes_with_one_warning(tmp_path, env):
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "hi", "--model", "claude-foo-9", "--output-format", "json"], env, tmp_path, sim)
        assert sim.message_requests[0].body["model"] == "claude-foo-9"
    warnings = [ln for ln in out.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and "not in loopwright's model table" in warnings[0] and "no price" in warnings[0]
    assert json.loads(out.stdout)["result"] == "ok"


def test_a_settings_model_is_named_as_such(tmp_path, env):
    (tmp_path / ".loopwright").mkdir()
    (tmp_path / ".loopwright" / "settings.json").write_text(json.dumps({"model": "opsu"}))
    out = cli(["-p", "hi"], env, tmp_path)
    assert out.returncode == 2 and "the settings' model: unknown model 'opsu'; did you mean 'opus'?" in out.stderr


@pytest.mark.parametrize("args,meant", [
    (["sheduler"], "loopwright scheduler"), (["-p", "setings"], "loopwright settings"),
    (["-p", "shedule"], "loopwright schedule"), (["-p", "mcp"], "loopwright mcp"),
    (["serv"], "loopwright serve"), (["sevre"], "loopwright serve"), (["-p", "Sevre!"], "loopwright serve"),
    (["session", "list"], "loopwright sessions"), (["server", "--port", "0"], "loopwright serve"),
])
def test_a_prompt_that_is_a_slip_of_a_subcommand_is_refused(tmp_path, env, args, meant):
    with Simulator([{"text": "never"}]) as sim:
        out = cli(args, env, tmp_path, sim)
        assert sim.message_requests == []
    assert out.returncode == 2 and f"did you mean `{meant}`?" in out.stderr and "more than one word" in out.stderr


@pytest.mark.parametrize("prompt", ["go", "test", "/goal", "run the scheduler", "server", "Service", "serves",
                                    "goals", "session", "crust"])
def test_ordinary_prompts_are_not_taken_for_subcommands(tmp_path, env, prompt):
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", prompt, "--goal-max-turns", "1"] if prompt == "/goal" else ["-p", prompt], env, tmp_path, sim)
    assert "looks like a subcommand" not in out.stderr
    assert out.returncode == 0 and len(sim.message_requests) == (prompt != "/goal"), out.stderr  # /goal: no goal set


@pytest.mark.parametrize("args,meant", [
    (["-p", "hi", "--max-turn", "3"], "--max-turns"), (["-p", "hi", "--verbos"], "--verbose"),
    (["-p", "hi", "--allowedTool", "Bash"], "--allowedTools"),
    (["schedule", "add", "x", "--every", "1h", "--max-run", "2"], "--max-runs"),
    (["settings", "check", "--jsn"], "--json"),
])
def test_flags_are_spelled_in_full_and_a_slip_names_the_flag(tmp_path, env, args, meant):
    out = cli(args, env, tmp_path)
    assert out.returncode == 2 and "unrecognized arguments" in out.stderr and f"did you mean {meant}?" in out.stderr


def test_the_name_checks_themselves():
    assert edits("sonet", "sonnet") == 1 and edits("kitten", "sitting") == 3 and edits("a", "abcdefgh", 3) == 4
    assert edits("sevre", "serve") == 1 and edits("ab", "ba") == 1 and edits("ca", "abc") == 3  # a swap is one
    assert nearest("Sonet", ["opus", "sonnet"], 2) == "sonnet" and nearest("zzz", ["opus"], 2) is None
    known = ["sonnet", "claude-sonnet-5"]
    assert check_model_name("SONNET", known) is None
    assert check_model_name("o3-mini", known).kind == "foreign" and check_model_name("gemini-3", known).kind == "foreign"
    assert check_model_name("my-model", known).kind == "unknown"


# --- the gaps of the first pass: settings' fallbackModel, slips with more words, schedules,
# --- every parser without abbreviations, choices that name the one meant, a real terminal


def test_a_settings_fallback_model_is_named_as_such(tmp_path, env):
    (tmp_path / ".loopwright").mkdir()
    (tmp_path / ".loopwright" / "settings.json").write_text(json.dumps({"fallbackModel": "haiku,sonet"}))
    with Simulator([{"text": "never"}]) as sim:
        out = cli(["-p", "hi"], env, tmp_path, sim)
        assert sim.message_requests == []
    assert out.returncode == 2 and "the settings' fallbackModel: unknown model 'sonet'; did you mean 'sonnet'?" \
        in out.stderr, out.stderr


def test_a_far_off_fallback_name_passes_with_one_warning(tmp_path, env):
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "hi", "--fallback-model", "claude-brand-new-9", "--output-format", "json"], env, tmp_path,
                  sim)
        assert sim.message_requests[0].body["model"] == "claude-sonnet-5"
    warnings = [ln for ln in out.stderr.splitlines() if "warning" in ln and "claude-brand-new-9" in ln]
    assert out.returncode == 0 and len(warnings) == 1 and "not in loopwright's model table" in warnings[0]


@pytest.mark.parametrize("args", [["sheduler", "list"], ["--model", "opus", "sheduler", "--every", "1h"],
                                  ["sheduler", "--model", "opus"]])
def test_a_slip_of_a_subcommand_with_more_words_names_the_subcommand(tmp_path, env, args):
    with Simulator([{"text": "never"}]) as sim:
        out = cli(args, env, tmp_path, sim)
        assert sim.message_requests == []
    assert out.returncode == 2 and "did you mean `loopwright scheduler`?" in out.stderr, out.stderr
    assert "-p 'sheduler please'" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_the_escape_hatch_the_hint_names_sends_the_prompt(tmp_path, env):
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "sheduler please", "--output-format", "json"], env, tmp_path, sim)
        assert len(sim.message_requests) == 1
    assert out.returncode == 0 and json.loads(out.stdout)["result"] == "ok"


def test_a_slip_at_an_interactive_terminal_is_refused_before_the_session_starts(tmp_path, env):
    import os
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "loopwright", "sheduler"], env=env, cwd=tmp_path,
                              stdin=follower, stdout=follower, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(follower)
        os.close(leader)
    assert proc.returncode == 2 and "did you mean `loopwright scheduler`?" in proc.stderr, proc.stderr


@pytest.mark.parametrize("args,meant", [
    (["demo", "--di", "x"], "did you mean --dir?"),
    (["goal", "status", "--sesion", "x"], "did you mean --session?"),
    (["sessions", "--al"], "did you mean --all?"),
    (["mcp", "lst"], "did you mean 'list'?"),
    (["settings", "chek"], "did you mean 'check'?"),
    (["schedule", "ad"], "did you mean 'add'?"),
    (["goal", "statu"], "did you mean 'status'?"),
    (["-p", "hi", "--output-format", "jsn"], "did you mean 'json'?"),
    (["-p", "hi", "--permission-mode", "plna"], None),  # free text, checked elsewhere: no choice hint
])
def test_every_parser_takes_flags_in_full_and_names_the_choice_meant(tmp_path, env, args, meant):
    out = cli(args, env, tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and out.stderr.startswith("loopwright: error:"), out.stderr
    if meant:
        assert meant in out.stderr, out.stderr
    assert not (tmp_path / "x").exists()  # `demo --di x` did not run the demo


def test_no_parser_in_the_package_abbreviates():
    import ast
    from pathlib import Path

    import loopwright

    root = Path(loopwright.__file__).parent
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) \
                    == "ArgumentParser":
                given = {k.arg: k.value for k in node.keywords}
                assert isinstance(given.get("allow_abbrev"), ast.Constant) and given["allow_abbrev"].value is False, \
                    f"{path}:{node.lineno}: use cli.parsing.Parser (or allow_abbrev=False)"


def _schedules(env, tmp_path):
    out = cli(["schedule", "list", "--json"], env, tmp_path)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("args,expected", [
    (["x y", "--every", "1h", "--", "--model", "sonet"], "--model: unknown model 'sonet'; did you mean 'sonnet'?"),
    (["x y", "--every", "1h", "--", "--fallback-model", "gpt-5"], "use openai:gpt-5"),
    (["x y", "--every", "1h", "--", "--goal", "done", "--goal-model", "hiaku"], "did you mean 'haiku'?"),
    (["setings", "--every", "1h"], "did you mean `loopwright settings`?"),
])
def test_a_schedule_is_checked_when_added_not_when_it_fires(tmp_path, env, args, expected):
    out = cli(["schedule", "add", *args], env, tmp_path)
    assert out.returncode == 2 and expected in out.stderr, out.stderr
    assert _schedules(env, tmp_path) == []


def test_a_schedule_may_name_a_new_model_or_allow_an_unknown_one(tmp_path, env):
    out = cli(["schedule", "add", "x y", "--every", "1h", "--", "--model", "claude-brand-new-9"], env, tmp_path)
    assert out.returncode == 0 and "not in loopwright's model table" in out.stderr, out.stderr
    out = cli(["schedule", "add", "x y", "--every", "1h", "--", "--model", "sonet", "--allow-unknown-model"], env,
              tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(_schedules(env, tmp_path)) == 2


def test_the_slip_and_choice_checks_themselves():
    from loopwright.policy.names import choice_slip, subcommand_slip

    subs = ["demo", "goal", "mcp", "schedule", "scheduler", "sessions", "settings", "trust"]
    assert subcommand_slip("sheduler", subs) == "scheduler" and subcommand_slip(" Setings ", subs) == "settings"
    assert subcommand_slip("mcp", subs) == "mcp"  # an exact name given after a flag is a slip too
    for prompt in ("test", "go", "/goal", "fix the tests", "", None, "refactor", "server", "service", "serves",
                   "Server.", "reserve", "setting", "trusted", "memo", "map"):
        assert subcommand_slip(prompt, subs + ["serve"]) is None, prompt
    for slip, meant in [("serv", "serve"), ("sevre", "serve"), ("srve", "serve"), ("trsut", "trust"),
                        ("scheduel", "schedule"), ("sesions", "sessions"), ("mcpp", "mcp"), ("Setings!", "settings")]:
        assert subcommand_slip(slip, subs + ["serve"]) == meant, slip
    # words of English are slips when the words after them failed to parse (`loopwright server --port 0`)
    assert subcommand_slip("server", subs + ["serve"], words_too=True) == "serve"
    assert choice_slip("lst", ["list", "get"]) == "list" and choice_slip("xyz", ["list", "get"]) is None


def test_each_word_kept_as_a_prompt_is_one_the_slip_check_would_otherwise_refuse():
    from loopwright.cli.parsing import SUBCOMMANDS
    from loopwright.policy.names import _NEAR_WORDS, subcommand_slip

    assert [w for w in sorted(_NEAR_WORDS) if subcommand_slip(w, SUBCOMMANDS, words_too=True) is None] == []
    assert [w for w in sorted(_NEAR_WORDS) if subcommand_slip(w, SUBCOMMANDS) is not None] == []


def test_a_prompt_hooks_model_is_checked_too(tmp_path, env):
    hook = {"type": "prompt", "prompt": "Is it done? $ARGUMENTS", "model": "hiaku"}
    (tmp_path / ".loopwright").mkdir()
    (tmp_path / ".loopwright" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [{"hooks": [hook]}]}}))
    with Simulator([{"text": "never"}]) as sim:
        out = cli(["-p", "hi"], env, tmp_path, sim)
        assert sim.message_requests == []
    assert out.returncode == 2 and "the settings' hooks.Stop[0].hooks[0].model: unknown model 'hiaku'; did you " \
        "mean 'haiku'?" in out.stderr, out.stderr
