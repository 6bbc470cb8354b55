"""One reader of durations (policy.durations) for the flags, `/loop` and schedule intervals and the
time limits a goal's condition states: what it accepts, what it refuses and that the refusal
names the input; and that each place that reads a duration reads it the same way."""

import json

import pytest
from test_goal_bounds import bounds_line, busy
from test_goal_session import cli, env  # noqa: F401  (env is a fixture)

from loopwright.policy.bounds import parse_bounds
from loopwright.policy.cadence import parse_interval, parse_loop
from loopwright.policy.durations import UNITS, parse_duration, unit_seconds
from loopwright.testing import Simulator


@pytest.mark.parametrize("text,seconds", [
    ("90", 90), ("45s", 45), ("30m", 1800), ("2h", 7200), ("1d", 86400), ("500ms", 0.5), ("1.5h", 5400),
    (" 2 hours ", 7200), ("3 mins", 180), ("1 day", 86400), ("10 Seconds", 10), ("5M", 300), ("0.25s", 0.25),
])
def test_a_duration_is_read_as_seconds(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text,detail", [
    ("", ""), ("   ", ""), ("soon", ""), ("m", ""), ("-5m", ""), ("+5m", ""), ("1e3", ""), ("5m30s", ""),
    ("1,5h", ""), ("inf", ""), ("nan", ""), ("0", ""), ("0.0h", ""), ("5 fortnights", "unknown time unit 'fortnights'"),
    ("5x", "unknown time unit 'x'"), ("9" * 400, "too long to count"),
])
def test_anything_else_is_refused_naming_the_input(text, detail):
    with pytest.raises(ValueError) as caught:
        parse_duration(text)
    message = str(caught.value)
    assert message.startswith("expected a positive duration such as 90s, 30m or 2h, got ")
    assert repr(text) in message and detail in message


def test_zero_is_a_duration_only_where_the_caller_allows_it():
    assert parse_duration("0s", allow_zero=True) == 0.0
    with pytest.raises(ValueError, match=r"expected a duration such as 90s, 30m or 2h, got 'soon'"):
        parse_duration("soon", allow_zero=True)


def test_a_non_text_value_is_refused_not_crashed_on():
    with pytest.raises(ValueError, match="got 5"):
        parse_duration(5)  # type: ignore[arg-type]


def test_every_unit_word_has_one_worth():
    assert {unit_seconds(word) for word in UNITS} == {0.001, 1, 60, 3600, 86400}
    assert unit_seconds("HOURS") == 3600
    with pytest.raises(ValueError, match="unknown time unit 'weeks'"):
        unit_seconds("weeks")


def test_loop_intervals_and_goal_conditions_share_the_units():
    assert parse_loop("check the build every 2 hrs").interval_s == 7200
    assert parse_loop("tidy up every 90 secs").interval_s == 90
    assert parse_interval("5m") == 300 and parse_interval("5 m") is None  # the leading form stays one word
    assert parse_loop("ping every 5 ms").interval_s is None  # no loop fires faster than a second: it is the prompt
    assert parse_bounds("done, within 90 secs").max_duration_s == 90
    assert parse_bounds("done, at most 2 hrs").max_duration_s == 7200
    with pytest.raises(ValueError, match="loop interval '8d'"):
        parse_interval("8d")


def test_the_flags_read_words_and_name_a_bad_value(tmp_path, env):
    out = cli(["-p", "hi", "--max-duration", "5 fortnights"], env, tmp_path)
    assert out.returncode == 2
    assert ("--max-duration: expected a positive duration such as 90s, 30m or 2h, got '5 fortnights' "
            "(unknown time unit 'fortnights'") in out.stderr
    with Simulator(busy()) as sim:
        out = cli(["-p", "/goal the moon is made of cheese", "--goal-max-duration", "90 minutes", "--goal-max-turns",
                   "1", "--allowedTools", "Bash", "--output-format", "json"], env, tmp_path, sim)
    assert json.loads(out.stdout)["goal"]["bounds"]["max_duration_s"] == 5400, out.stderr
    assert "90m (flag)" in bounds_line(out.stderr)
