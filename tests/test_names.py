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
])
def test_a_prompt_that_is_a_slip_of_a_subcommand_is_refused(tmp_path, env, args, meant):
    with Simulator([{"text": "never"}]) as sim:
        out = cli(args, env, tmp_path, sim)
        assert sim.message_requests == []
    assert out.returncode == 2 and f"did you mean `{meant}`?" in out.stderr and "more than one word" in out.stderr


@pytest.mark.parametrize("prompt", ["go", "test", "/goal", "run the scheduler"])
def test_ordinary_prompts_are_not_taken_for_subcommands(tmp_path, env, prompt):
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", prompt, "--goal-max-turns", "1"] if prompt == "/goal" else ["-p", prompt], env, tmp_path, sim)
    assert "looks like a subcommand" not in out.stderr


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
    assert nearest("Sonet", ["opus", "sonnet"], 2) == "sonnet" and nearest("zzz", ["opus"], 2) is None
    known = ["sonnet", "claude-sonnet-5"]
    assert check_model_name("SONNET", known) is None
    assert check_model_name("o3-mini", known).kind == "foreign" and check_model_name("gemini-3", known).kind == "foreign"
    assert check_model_name("my-model", known).kind == "unknown"
