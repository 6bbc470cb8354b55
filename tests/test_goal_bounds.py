"""A goal never runs away by default (issue 23 item 1): turns, wall time and — where the model's
price is known — money bound every goal unless the user bounds it otherwise or lifts a bound
with `none`; the run says once which bounds apply, and the result records them. Driven as a
user would: the CLI in a fresh HOME against the simulator."""

import json

import pytest
from test_goal_session import JUDGE, cli, env  # noqa: F401  (env is a fixture)

from loopwright.engine.goal import GoalSpec, SavedGoal, resumed_goal
from loopwright.policy.bounds import DEFAULT_TURNS, goal_bounds, Bounds
from loopwright.testing import Simulator

NOT_MET = {"match": JUDGE, "responses": [{"text": '{"ok": false, "reason": "no cheese yet"}', "repeat": -1}]}


def busy(**reply):
    """An agent that makes one harmless tool call every turn and never stops on its own."""
    return {"rules": [NOT_MET, {"responses": [{"tool_use": {"name": "Bash", "input": {"command": "true"}},
                                               "repeat": -1, **reply}]}]}


def bounds_line(stderr):
    [line] = [ln for ln in stderr.splitlines() if "goal bounds" in ln or "no bounds" in ln]
    return line


def test_an_unbounded_goal_stops_at_the_default_turn_bound_and_says_so(tmp_path, env):
    with Simulator(busy()) as sim:
        out = cli(["-p", "/goal the moon is made of cheese", "--allowedTools", "Bash", "--output-format", "json"],
                  env, tmp_path, sim)
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "goal_max_turns" and result["is_error"], out.stderr
    assert result["num_turns"] == DEFAULT_TURNS == 100
    assert bounds_line(out.stderr) == ("loopwright: goal bounds: 100 turns (default), 2h (default), $10 (default); "
                                       "change with --goal-max-turns, --goal-max-duration, --goal-max-budget-usd "
                                       "(a value, or none)")
    assert result["goal"]["bounds"] == {"max_turns": 100, "max_duration_s": 7200.0, "max_budget_usd": 10.0,
                                        "origin": {"turns": "default", "duration": "default", "budget": "default"}}


def test_the_default_money_bound_stops_an_expensive_goal(tmp_path, env):
    # a million input tokens a turn at the default model's price: $10 is spent within a few turns
    with Simulator(busy(usage={"input_tokens": 1_000_000})) as sim:
        out = cli(["-p", "/goal the moon is made of cheese", "--allowedTools", "Bash", "--output-format", "json"],
                  env, tmp_path, sim)
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "goal_max_budget", out.stderr
    assert 10 <= result["total_cost_usd"] < 20 and result["num_turns"] < 10


def test_flags_and_words_replace_a_default_and_none_lifts_it(tmp_path, env):
    with Simulator(busy()) as sim:
        out = cli(["-p", "/goal the moon is made of cheese, or stop after 3 turns", "--goal-max-duration", "none",
                   "--goal-max-budget-usd", "2.5", "--allowedTools", "Bash", "--output-format", "json"],
                  env, tmp_path, sim)
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "goal_max_turns" and result["num_turns"] == 3, out.stderr
    assert "3 turns (condition), no duration bound (removed), $2.5 (flag)" in bounds_line(out.stderr)
    assert result["goal"]["bounds"]["origin"] == {"turns": "condition", "duration": "none", "budget": "flag"}


def test_a_goal_without_any_bound_is_possible_only_by_saying_so(tmp_path, env):
    with Simulator(busy()) as sim:
        out = cli(["-p", "/goal the moon is made of cheese", "--goal-max-turns", "none", "--goal-max-duration",
                   "none", "--goal-max-budget-usd", "NONE", "--max-turns", "4", "--allowedTools", "Bash",
                   "--output-format", "json"], env, tmp_path, sim)
    result = json.loads(out.stdout)
    assert "warning: this goal has no bounds" in bounds_line(out.stderr)
    assert result["terminal_reason"] == "max_turns" and result["num_turns"] == 4, out.stderr  # the run's own limit


@pytest.mark.parametrize("flag,value,expected", [
    ("--goal-max-turns", "ten", "expected a whole number above 0, or none"),
    ("--goal-max-turns", "0", "expected a whole number above 0, or none"),
    ("--goal-max-duration", "soon", "expected a positive duration"),
    ("--goal-max-budget-usd", "-1", "expected an amount above 0"),
    ("--goal-max-budget-usd", "nan", "expected an amount above 0"),
])
def test_a_bad_bound_is_named(tmp_path, env, flag, value, expected):
    out = cli(["-p", "/goal x exists", flag, value], env, tmp_path)
    assert out.returncode == 2 and flag in out.stderr and expected in out.stderr and repr(value) in out.stderr


def test_a_model_without_a_price_cannot_be_bounded_by_money_alone(tmp_path, env):
    out = cli(["-p", "hi", "--model", "acme-reasoner-7", "--max-budget-usd", "1"], env, tmp_path)
    assert out.returncode == 2 and "--max-budget-usd: no price is known for model acme-reasoner-7" in out.stderr
    assert "--max-tokens-total" in out.stderr
    out = cli(["-p", "/goal x exists", "--model", "acme-reasoner-7", "--goal-max-budget-usd", "1"], env, tmp_path)
    assert out.returncode == 2 and "--goal-max-budget-usd: no price is known" in out.stderr
    with Simulator(busy()) as sim:  # with a token bound beside it, the run goes ahead
        out = cli(["-p", "/goal the moon is made of cheese", "--model", "acme-reasoner-7", "--max-tokens-total",
                   "999999999", "--goal-max-turns", "2", "--allowedTools", "Bash", "--output-format", "json"],
                  env, tmp_path, sim)
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "goal_max_turns", out.stderr
    assert "2 turns (flag), 2h (default), no money bound (no price is known for the model)" in bounds_line(out.stderr)
    assert result["goal"]["bounds"]["origin"]["budget"] == "unpriced"


def test_a_transcript_cannot_lift_a_bound_on_resume():
    recorded = GoalSpec("x exists", max_turns=7, unbounded=("turns", "budget"))
    saved = SavedGoal(GoalSpec.from_json(json.loads(json.dumps(recorded.to_json()))), {}, True, {})
    assert saved.spec.unbounded == ("turns", "budget")
    spec, _, warnings = resumed_goal(saved, [], [], unbounded=("budget",))
    assert spec.unbounded == ("budget",) and spec.max_turns == 7
    assert any("bounds removed (turns)" in w for w in warnings)
    spec, _, warnings = resumed_goal(saved, [], [])
    assert spec.bounds().origin == {"turns": "flag", "duration": "default", "budget": "default"} and warnings
    # an unknown name in a stored spec lifts nothing
    assert GoalSpec.from_json({"condition": "x", "unbounded": ["turns", "everything"]}).unbounded == ("turns",)


def test_the_tightest_stated_bound_wins():
    b = goal_bounds(Bounds(max_turns=50, max_duration_s=60.0), "done, or stop after 20 turns within 2 hours")
    assert (b.bounds.max_turns, b.bounds.max_duration_s) == (20, 60.0)
    assert b.origin == {"turns": "condition", "duration": "flag", "budget": "default"}
    assert goal_bounds(Bounds(), "x", ("budget",), priced=False).origin["budget"] == "none"
