"""Time-based loop policy: `/loop` arguments, clean cron steps, next fire times in local time,
wake-up bounds, and the decision after every iteration (pure: no clock, no I/O)."""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.policy.cadence import (
    EXPIRY_S, FALLBACK_WAKEUP_S, Iteration, LoopArgs, LoopPlan, LoopState, End, Wait, after_iteration, cadence,
    FireDecision, clamp_wakeup, cron_error, cron_next, decide_fire, next_fire, parse_loop, schedule_step,
)


@pytest.fixture(autouse=True)
def utc_then_back():
    """Fire times follow local time: pin the zone so the expected times are exact."""
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = old
    time.tzset()


@pytest.mark.parametrize(("text", "expected"), [
    ("5m check the deploy", LoopArgs(300, "check the deploy")),
    ("30s ping", LoopArgs(30, "ping")),
    ("2h", LoopArgs(7200, "")),
    ("check the build every 2 hours", LoopArgs(7200, "check the build")),
    ("check the build, every hour.", LoopArgs(3600, "check the build")),
    ("tidy up every 15 minutes", LoopArgs(900, "tidy up")),
    ("watch the queue every 1d", LoopArgs(86400, "watch the queue")),
    ("keep the tests green", LoopArgs(None, "keep the tests green")),
    ("fix 5 tests", LoopArgs(None, "fix 5 tests")),  # a number in the prompt is not an interval
    ("5 tests to fix", LoopArgs(None, "5 tests to fix")),
    ("read every line", LoopArgs(None, "read every line")),  # "every" without a unit is prose
    ("", LoopArgs(None, "")),
])
def test_parse_loop(text, expected):
    assert parse_loop(text) == expected


@pytest.mark.parametrize(("text", "said"), [("0m x", "0m"), ("8d x", "8d"), ("x every 0 hours", "every 0 hours")])
def test_intervals_a_loop_cannot_keep_are_errors_naming_them(text, said):
    with pytest.raises(ValueError, match=f"loop interval '{said}'"):
        parse_loop(text)


@pytest.mark.parametrize(("seconds", "cron", "every", "noted"), [
    (300, "*/5 * * * *", 300, False),
    (60, "* * * * *", 60, False),
    (30, "* * * * *", 60, True),  # seconds round up to a minute
    (90, "*/2 * * * *", 120, True),
    (7 * 60, "*/6 * * * *", 360, True),  # 7m is no clean step: the nearest is
    (45 * 60, "0 * * * *", 3600, True),  # 30m and 1h equally near: the longer
    (90 * 60, "0 */2 * * *", 7200, True),
    (3600, "0 * * * *", 3600, False),
    (5 * 3600, "0 */6 * * *", 6 * 3600, True),
    (86400, "0 0 * * *", 86400, False),
    (2 * 86400, "0 0 */2 * *", 2 * 86400, False),
])
def test_cadence_is_a_clean_cron_step(seconds, cron, every, noted):
    c = cadence(seconds)
    assert (c.cron, c.every_s, c.note is not None) == (cron, every, noted)
    if noted:
        assert "not a clean cron step" in c.note and c.cron in c.note


T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def test_next_fire_follows_the_cron_step():
    assert time.gmtime(T0)[:6] == (2027, 1, 15, 8, 0, 0)
    assert next_fire(300, T0) == T0 + 300  # strictly after
    assert next_fire(300, T0 + 61) == T0 + 300
    assert next_fire(360, T0 + 57 * 60) == T0 + 3600  # */6 restarts at the top of the hour
    assert next_fire(2 * 3600, T0) == T0 + 2 * 3600  # 08:00 -> 10:00
    assert next_fire(3 * 3600, T0 + 1) == T0 + 3600  # */3 hours (0, 3, 6, 9, …): 09:00 is next
    assert next_fire(86400, T0) == T0 + 16 * 3600  # midnight
    # */2 days: days 1, 3, …, 15, 17: from the 15th at 08:00 the next is the 17th at midnight
    assert time.gmtime(next_fire(2 * 86400, T0))[:4] == (2027, 1, 17, 0)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 86400, 3 * 86400]),
       st.floats(min_value=1.6e9, max_value=2.0e9))
def test_next_fire_is_after_and_within_one_step(every, after):
    nxt = next_fire(every, after)
    assert after < nxt <= after + every + (86400 * 3 if every >= 86400 else 0)
    assert nxt % 60 == 0


def test_wakeups_are_clamped_with_a_note():
    assert clamp_wakeup(300) == (300, None)
    assert clamp_wakeup(5)[0] == 60 and "using 60s" in clamp_wakeup(5)[1]
    assert clamp_wakeup(86400)[0] == 3600


FIXED = LoopPlan(every_s=300, started=T0, expires=T0 + EXPIRY_S)
PACED = LoopPlan(every_s=None, started=T0, expires=T0 + EXPIRY_S)


def test_fixed_loop_waits_for_the_next_fire_and_collapses_missed_ones():
    nxt, state = after_iteration(FIXED, LoopState(), Iteration(T0, T0 + 30))
    assert nxt == Wait(T0 + 300, "schedule") and state.iterations == 1
    # an iteration that ran past three fire times: one fire, at once
    nxt, _ = after_iteration(FIXED, state, Iteration(T0 + 300, T0 + 1250))
    assert nxt == Wait(T0 + 1250, "missed")


def test_self_paced_wakeup_stop_and_the_single_fallback():
    nxt, state = after_iteration(PACED, LoopState(), Iteration(T0, T0 + 10, wakeup_s=120))
    assert nxt == Wait(T0 + 130, "wakeup")
    nxt, state = after_iteration(PACED, state, Iteration(T0 + 130, T0 + 140))  # neither: fallback
    assert nxt == Wait(T0 + 140 + FALLBACK_WAKEUP_S, "fallback") and state.fallback_pending
    nxt, _ = after_iteration(PACED, state, Iteration(T0 + 1340, T0 + 1350))  # again neither: done
    assert nxt == End("no_reschedule")
    nxt, state2 = after_iteration(PACED, state, Iteration(T0 + 1340, T0 + 1350, wakeup_s=60))
    assert nxt == Wait(T0 + 1410, "wakeup") and not state2.fallback_pending  # a reschedule resets it
    assert after_iteration(PACED, LoopState(), Iteration(T0, T0 + 1, stop=True))[0] == End("stopped")


def test_bounds_end_the_loop():
    bounded = LoopPlan(300, T0, T0 + EXPIRY_S, until=T0 + 500, max_iterations=3)
    nxt, state = after_iteration(bounded, LoopState(), Iteration(T0, T0 + 1))
    assert nxt == Wait(T0 + 300, "schedule")
    assert after_iteration(bounded, state, Iteration(T0 + 300, T0 + 301))[0] == End("until")
    capped = LoopPlan(300, T0, T0 + EXPIRY_S, max_iterations=2)
    _, state = after_iteration(capped, LoopState(), Iteration(T0, T0 + 1))
    assert after_iteration(capped, state, Iteration(T0 + 300, T0 + 301))[0] == End("max_iterations")
    assert after_iteration(FIXED, LoopState(), Iteration(T0, T0 + 1, interrupted=True))[0] == End("interrupted")


def test_three_failed_iterations_in_a_row_end_it_and_a_success_resets_the_count():
    state = LoopState()
    for i in range(2):
        nxt, state = after_iteration(FIXED, state, Iteration(T0 + i * 300, T0 + i * 300 + 1, failed=True))
        assert isinstance(nxt, Wait)
    _, reset = after_iteration(FIXED, state, Iteration(T0 + 600, T0 + 601))
    assert reset.failures_in_row == 0
    assert after_iteration(FIXED, state, Iteration(T0 + 600, T0 + 601, failed=True))[0] == End("failing")


def test_the_whole_loops_spend_is_bounded():
    plan = LoopPlan(300, T0, T0 + EXPIRY_S, max_budget_usd=1.0)
    nxt, state = after_iteration(plan, LoopState(), Iteration(T0, T0 + 1, cost_usd=0.6))
    assert isinstance(nxt, Wait) and state.spent_usd == pytest.approx(0.6)
    nxt, state = after_iteration(plan, state, Iteration(T0 + 300, T0 + 301, cost_usd=0.5))
    assert nxt == End("budget_exhausted") and state.spent_usd == pytest.approx(1.1)


def test_a_week_on_one_final_iteration_then_expired():
    near_end = T0 + EXPIRY_S - 100
    nxt, state = after_iteration(FIXED, LoopState(), Iteration(near_end, near_end + 1))
    assert nxt == Wait(T0 + EXPIRY_S, "expiry") and state.final
    assert after_iteration(FIXED, state, Iteration(T0 + EXPIRY_S, T0 + EXPIRY_S + 5))[0] == End("expired")


def test_a_due_fire_runs_and_the_next_is_the_following_step():
    d = decide_fire(schedule_step(300), T0, T0 + 2, grace_s=60, running=False, runs=0, max_runs=None)
    assert d == FireDecision(T0, T0 + 300, True)


def test_missed_fires_collapse_into_the_latest_within_the_grace():
    d = decide_fire(schedule_step(300), T0, T0 + 3 * 300 + 20, grace_s=60, running=False, runs=0, max_runs=None)
    assert d == FireDecision(T0 + 900, T0 + 1200, True)


def test_a_fire_later_than_the_grace_is_skipped_as_a_misfire():
    d = decide_fire(schedule_step(3600), T0, T0 + 1800, grace_s=300, running=False, runs=0, max_runs=None)
    assert d == FireDecision(T0, T0 + 3600, False, "misfire")


def test_no_overlap_while_the_previous_run_goes_on():
    d = decide_fire(schedule_step(300), T0, T0 + 1, grace_s=60, running=True, runs=3, max_runs=None)
    assert d == FireDecision(T0, T0 + 300, False, "overlap")


def test_the_last_allowed_run_finishes_the_schedule():
    assert decide_fire(schedule_step(300), T0, T0, grace_s=60, running=False, runs=1, max_runs=2).next_at is None
    assert decide_fire(schedule_step(300), T0, T0, grace_s=60, running=False, runs=0, max_runs=2).next_at == T0 + 300


def test_cron_expressions_in_local_time_with_five_fields_only():
    weekdays_at_9 = "0 9 * * 1-5"
    assert cron_error(weekdays_at_9) is None
    assert time.gmtime(cron_next(weekdays_at_9, T0))[:5] == (2027, 1, 15, 9, 0)  # Friday 08:00 -> 09:00
    assert time.gmtime(cron_next(weekdays_at_9, T0 + 3600))[:5] == (2027, 1, 18, 9, 0)  # then Monday
    for bad in ("* * * *", "0 0 * * * *", "@daily", "every day"):
        assert "expected five cron fields" in cron_error(bad)
    assert cron_error("61 * * * *") == ("the minute field '61' of '61 * * * *' is not valid: expected 0-59, `*`, "
                                        "a list, range or step")
    assert "the hour field '24'" in cron_error("0 24 * * *") and "the month field 'foo'" in cron_error("0 0 1 foo *")
    assert "the day-of-week field '9'" in cron_error("0 0 * * 9")


def test_missed_cron_fires_collapse_too():
    hourly = schedule_step(0, "0 * * * *")
    d = decide_fire(hourly, T0, T0 + 3 * 3600 + 30, grace_s=60, running=False, runs=0, max_runs=None)
    assert d == FireDecision(T0 + 3 * 3600, T0 + 4 * 3600, True)
