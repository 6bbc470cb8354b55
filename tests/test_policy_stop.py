"""`policy.stop.decide`, table-first: each row of LOOP.md's outcome and error tables, then
properties over arbitrary sequences of outcomes."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.core.errors import ModelError
from loopwright.policy.budget import Budget, Spent, check_limits
from loopwright.policy.retry import backoff_delay, retry_category
from loopwright.policy.stop import (
    CandidateStop, Caps, Compact, Continue, Escalate, Finish, Limits, LoopState, Resend, Retry,
    RunTools, SwitchModel, after_tools, decide, on_stop_hooks,
)
from loopwright.policy.unrun import sanitize
from loopwright.core.types import Message, Response, TextBlock, ThinkingBlock, ToolUseBlock, Usage

CAPS = Caps(default_output=64000, max_output=128000)
LIM = Limits(max_turns=None)
START = LoopState(max_tokens=64000)


def resp(*blocks, stop="end_turn"):
    return Response(Message("assistant", tuple(blocks)), stop, "m", Usage(1, 1))


def call(name="Bash", complete=True, id="t1"):
    return ToolUseBlock(id, name, {"command": "x"} if complete else {}, complete=complete,
                        raw_input=None if complete else '{"comm')


def bad(name="Bash", id="b1", raw="[1, 2]"):
    """A finished call whose input is not a JSON object."""
    return ToolUseBlock(id, name, {}, complete=False, raw_input=raw, problem="the input is a JSON array, not an object")


def err(kind, **kw):
    return ModelError(kind, "boom", **kw)


# ------------------------------------------------------------ outcomes


def test_complete_tool_use_runs_tools_and_counts_a_turn():
    nxt, s = decide(resp(TextBlock("hi"), call()), START, LIM, CAPS)
    assert isinstance(nxt, RunTools) and [c.id for c in nxt.calls] == ["t1"]
    assert s.turns == 1


def test_dispatch_is_by_content_not_label():
    nxt, _ = decide(resp(call(), stop="end_turn"), START, LIM, CAPS)
    assert isinstance(nxt, RunTools)
    nxt, _ = decide(resp(TextBlock("done"), stop="tool_use"), START, LIM, CAPS)
    assert isinstance(nxt, CandidateStop)


@pytest.mark.parametrize("stop", ["end_turn", "stop_sequence"])
def test_text_only_is_a_candidate_stop(stop):
    nxt, s = decide(resp(TextBlock("done"), stop=stop), START, LIM, CAPS)
    assert isinstance(nxt, CandidateStop) and s.turns == 1


def test_empty_end_turn_resends_then_nudges_then_fails():
    empty = resp(stop="end_turn")
    nxt, s = decide(empty, START, LIM, CAPS)
    assert isinstance(nxt, Resend) and s.turns == 0
    nxt, s = decide(empty, s, LIM, CAPS)
    assert isinstance(nxt, Continue) and nxt.append[0].role == "user"
    nxt, s = decide(empty, s, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == "empty_response" and nxt.is_error


def test_thinking_only_counts_as_empty():
    nxt, _ = decide(resp(ThinkingBlock("hmm", "sig")), START, LIM, CAPS)
    assert isinstance(nxt, Resend)


def test_max_tokens_text_escalates_once_then_continues_three_times_then_fails():
    cut = resp(TextBlock("part"), stop="max_tokens")
    nxt, s = decide(cut, START, LIM, CAPS)
    assert nxt == Escalate(128000) and s.max_tokens == 128000 and s.turns == 0
    texts = []
    for i in range(3):
        nxt, s = decide(cut, s, LIM, CAPS)
        assert isinstance(nxt, Continue) and nxt.append[0].text == "part"
        assert nxt.append[1].role == "user"
        texts.append(nxt)
    nxt, s = decide(cut, s, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == "max_output_tokens" and nxt.is_error
    assert nxt.result == "part" * 4  # joined text of all segments


def test_max_tokens_at_ceiling_continues_without_escalation():
    nxt, _ = decide(resp(TextBlock("x"), stop="max_tokens"), LoopState(max_tokens=128000), LIM, CAPS)
    assert isinstance(nxt, Continue)


def test_truncated_tool_use_is_never_run_escalates_then_is_neutralised():
    cut = resp(TextBlock("writing"), call("Write", complete=False), stop="max_tokens")
    nxt, s = decide(cut, START, LIM, CAPS)
    assert isinstance(nxt, Escalate)
    nxt, s = decide(cut, s, LIM, CAPS)
    assert isinstance(nxt, Continue)
    assistant, nudge = nxt.append
    assert not assistant.tool_uses, "the cut tool call must not enter the conversation as a call"
    assert "Write" in assistant.text and "Write" in nudge.text and "Split" in nudge.text


def test_complete_calls_before_a_cut_run():
    cut = resp(call("Read", id="a"), TextBlock("and then"), stop="max_tokens")
    nxt, _ = decide(cut, START, LIM, CAPS)
    assert isinstance(nxt, RunTools) and [c.id for c in nxt.calls] == ["a"]


def test_pause_turn_resent_as_is_five_times():
    paused = resp(TextBlock("searching"), stop="pause_turn")
    s = START
    for _ in range(5):
        nxt, s = decide(paused, s, LIM, CAPS)
        assert isinstance(nxt, Continue) and nxt.append == (paused.message,)
    nxt, s = decide(paused, s, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == "pause_turn_limit"


def test_refusal_never_runs_tools_and_falls_back_once():
    refused = resp(TextBlock("no"), call(), stop="refusal")
    nxt, _ = decide(refused, START, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == "refusal" and nxt.is_error
    lim = Limits(fallback_models=("fb",))
    nxt, s = decide(refused, START, lim, CAPS)
    assert nxt == SwitchModel("fb", "refusal")
    nxt, s = decide(refused, s, lim, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == "refusal"


def test_context_window_exceeded_compacts_once_per_turn():
    full = resp(TextBlock("partial"), stop="model_context_window_exceeded")
    nxt, s = decide(full, START, LIM, CAPS)
    assert isinstance(nxt, Compact) and nxt.partial is not None
    nxt, s = decide(full, s, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == "prompt_too_long"


def test_malformed_calls_never_run_and_are_answered_with_what_arrived():
    nxt, s = decide(resp(TextBlock("trying"), bad()), START, LIM, CAPS)
    assert isinstance(nxt, RunTools) and nxt.calls == () and s.turns == 1 and s.malformed_streak == 1
    [answer] = nxt.answered
    assert answer.tool_use_id == "b1" and answer.is_error
    assert "Bash" in answer.text and "JSON array" in answer.text and "[1, 2]" in answer.text
    assert nxt.assistant.tool_uses == (bad(),)  # kept, answered: the history sends `{}` for it


def test_three_responses_of_only_malformed_calls_end_the_run_with_the_last_raw_input():
    s = START
    for i in range(2):
        nxt, s = decide(resp(bad(raw=f"raw{i}")), s, LIM, CAPS)
        assert isinstance(nxt, RunTools)
    nxt, s = decide(resp(bad(raw="raw2"), bad(id="b2", raw="the last")), s, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == "malformed_tool_input" and nxt.is_error
    assert nxt.subtype == "error_during_execution" and "the last" in nxt.errors[0]
    assert nxt.append is not None and [r.tool_use_id for r in nxt.answer.content] == ["b1", "b2"]


def test_a_valid_call_beside_a_malformed_one_runs_and_resets_the_count():
    s = START
    nxt, s = decide(resp(bad()), s, LIM, CAPS)
    nxt, s = decide(resp(bad()), s, LIM, CAPS)
    nxt, s = decide(resp(call(id="ok"), bad()), s, LIM, CAPS)
    assert [c.id for c in nxt.calls] == ["ok"] and [r.tool_use_id for r in nxt.answered] == ["b1"]
    assert s.malformed_streak == 0
    assert [r.tool_use_id for r in nxt.in_order([])] == ["b1"]


def test_a_malformed_call_before_a_cut_is_answered_and_the_cut_one_becomes_a_note():
    cut = resp(bad(id="m"), call("Read", id="r"), call("Write", complete=False, id="w"), stop="max_tokens")
    nxt, _ = decide(cut, LoopState(max_tokens=128000), LIM, CAPS)
    assert isinstance(nxt, RunTools) and [c.id for c in nxt.calls] == ["r"]
    assert [r.tool_use_id for r in nxt.answered] == ["m"] and [b.id for b in nxt.assistant.tool_uses] == ["m", "r"]
    assert "Write" in nxt.assistant.text and nxt.note and "Split" in nxt.note


def test_calls_of_a_response_that_filled_the_window_become_notes():
    nxt, _ = decide(resp(TextBlock("t"), call(), bad(), stop="model_context_window_exceeded"), START, LIM, CAPS)
    assert isinstance(nxt, Compact) and not nxt.partial.tool_uses and "did not run" in nxt.partial.text


def test_unknown_blocks_alone_are_an_empty_response_and_an_empty_pause_adds_nothing():
    from loopwright.core.types import OpaqueBlock

    nxt, _ = decide(resp(OpaqueBlock({"type": "mystery"})), START, LIM, CAPS)
    assert isinstance(nxt, Resend)
    nxt, _ = decide(resp(stop="pause_turn"), START, LIM, CAPS)
    assert nxt == Continue((), "pause_turn")


def test_a_pause_with_a_client_tool_call_runs_it():
    nxt, _ = decide(resp(call(), stop="pause_turn"), START, LIM, CAPS)
    assert isinstance(nxt, RunTools)


def test_an_unknown_stop_reason_is_named_the_first_time_only():
    from loopwright.policy.stop import stop_reason_warning

    odd = Response(Message("assistant", (TextBlock("x"),)), None, "m", raw_stop_reason="brand_new")
    assert "brand_new" in stop_reason_warning(odd, 1) and stop_reason_warning(odd, 2) is None
    assert stop_reason_warning(resp(TextBlock("x")), 1) is None
    nxt, _ = decide(odd, START, LIM, CAPS)
    assert isinstance(nxt, CandidateStop)  # by content


# ------------------------------------------------------------ errors


def test_an_api_that_never_answered_gets_two_quick_retries_then_api_unreachable():
    s = START
    delays = []
    for _ in range(2):
        nxt, s = decide(err("unreachable"), s, LIM, CAPS, jitter=0.9)
        assert isinstance(nxt, Retry) and nxt.limit == 2 and nxt.category == "network"
        delays.append(nxt.delay)
    assert delays == sorted(delays) and max(delays) < 1
    nxt, s = decide(err("unreachable"), s, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == "api_unreachable" and nxt.is_error
    assert nxt.errors == ("After 3 attempts: boom",) and nxt.api_error_status is None


@pytest.mark.parametrize("kind,status", [("invalid_request", 400), ("authentication", 401), ("rate_limit", 429)])
def test_a_final_api_error_carries_its_status(kind, status):
    s = START
    for _ in range(11):
        nxt, s = decide(err(kind, status=status), s, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.api_error_status == status
    nxt, _ = decide(err("prompt_too_long", status=400), START, LIM, CAPS)
    assert isinstance(nxt, Compact) and nxt.status == 400


@pytest.mark.parametrize("kind,category", [("rate_limit", "rate_limit"), ("server", "server"),
                                           ("network", "network"), ("stream_incomplete", "network"),
                                           ("overloaded", "overloaded")])
def test_retryable_errors_retry_ten_times(kind, category):
    s = START
    for i in range(10):
        nxt, s = decide(err(kind), s, LIM, CAPS, jitter=0.0)
        assert isinstance(nxt, Retry) and nxt.category == category
    nxt, s = decide(err(kind), s, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == "api_error"


def test_retry_after_is_a_floor():
    nxt, _ = decide(err("rate_limit", retry_after=3.0), START, LIM, CAPS, jitter=0.0)
    assert nxt.delay == 3.0


@pytest.mark.parametrize("kind,reason", [("authentication", "authentication_failed"),
                                         ("permission", "authentication_failed"),
                                         ("invalid_request", "api_error"), ("not_found", "api_error"),
                                         ("spend_limit", "api_error"), ("billing", "api_error")])
def test_final_errors_are_not_retried(kind, reason):
    nxt, _ = decide(err(kind, should_retry=True), START, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == reason and nxt.is_error


def test_x_should_retry_false_stops():
    nxt, _ = decide(err("server", should_retry=False), START, LIM, CAPS)
    assert isinstance(nxt, Finish)


def test_three_overloaded_switch_to_fallback_never_on_rate_limit():
    lim = Limits(fallback_models=("fb1", "fb2"))
    s = START
    for _ in range(2):
        nxt, s = decide(err("overloaded"), s, lim, CAPS)
        assert isinstance(nxt, Retry)
    nxt, s = decide(err("overloaded"), s, lim, CAPS)
    assert nxt == SwitchModel("fb1", "3 consecutive overloaded errors")
    s2 = START
    for _ in range(10):
        nxt, s2 = decide(err("rate_limit"), s2, lim, CAPS)
        assert isinstance(nxt, Retry)


def test_prompt_too_long_compacts_once_then_fails():
    nxt, s = decide(err("prompt_too_long"), START, LIM, CAPS)
    assert isinstance(nxt, Compact)
    nxt, s = decide(err("prompt_too_long"), s, LIM, CAPS)
    assert isinstance(nxt, Finish) and nxt.terminal_reason == "prompt_too_long"


def test_backoff_schedule():
    assert [backoff_delay(n, 0.0) for n in range(8)] == [0.5, 1, 2, 4, 8, 16, 32, 32]
    assert backoff_delay(0, 0.999) == pytest.approx(0.5 * 1.24975)
    assert backoff_delay(2, 0.0, retry_after=5) == 5
    assert retry_category(err("server", should_retry=False)) is None


# ------------------------------------------------------------ stop hooks and limits


def test_stop_hook_block_cap_eight_then_success_with_last_text():
    assistant = Message("assistant", (TextBlock("done?"),))
    s = START
    for _ in range(8):
        nxt, s = on_stop_hooks("keep going", assistant, s, LIM)
        assert isinstance(nxt, Continue) and nxt.append[0].text == "keep going"
    nxt, s = on_stop_hooks("keep going", assistant, s, LIM)
    assert isinstance(nxt, Finish) and nxt.subtype == "success" and nxt.result == "done?" and nxt.warning
    assert after_tools(s, CAPS).stop_blocks == 0


def test_limits():
    assert check_limits(Spent(turns=2), Limits(max_turns=2), Budget()).errors == ("Reached maximum number of turns (2)",)
    assert check_limits(Spent(turns=1), Limits(max_turns=2), Budget()) is None
    assert check_limits(Spent(cost_usd=1.0), LIM, Budget(max_budget_usd=1.0)).subtype == "error_max_budget_usd"
    assert check_limits(Spent(tokens=10), LIM, Budget(max_tokens_total=10)).subtype == "error_max_budget_tokens"
    assert check_limits(Spent(elapsed_s=60), LIM, Budget(max_duration_s=60)).subtype == "error_max_duration"


# ------------------------------------------------------------ properties

OUTCOMES = st.one_of(
    st.sampled_from([
        resp(TextBlock("t")), resp(call()), resp(TextBlock("t"), call(), stop="refusal"),
        resp(TextBlock("t"), stop="max_tokens"), resp(call("Write", complete=False), stop="max_tokens"),
        resp(TextBlock("p"), stop="pause_turn"), resp(stop="end_turn"),
        resp(TextBlock("f"), stop="model_context_window_exceeded"),
        resp(call(), call("Read", complete=False, id="t2"), stop="max_tokens"),
        resp(bad()), resp(call(), bad(id="t3")), resp(TextBlock("t"), bad(), stop="refusal"),
        resp(bad(), stop="max_tokens"), resp(call(), stop="pause_turn"), resp(bad(), stop="tool_use"),
    ]),
    st.sampled_from(["rate_limit", "overloaded", "server", "network", "prompt_too_long", "invalid_request",
                     "stream_incomplete", "authentication", "unreachable"]).map(err),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(OUTCOMES, min_size=1, max_size=200), st.booleans())
def test_any_sequence_ends_within_bounds_and_never_runs_cut_or_refused_calls(outcomes, fallback):
    lim = Limits(max_turns=30, fallback_models=("fb",) if fallback else ())
    s, caps, calls_made, finished = START, CAPS, 0, False
    for outcome in outcomes:
        from loopwright.policy.budget import check_limits as limit_check

        if limit_check(Spent(turns=s.turns), lim, Budget()) is not None:
            finished = True
            break
        calls_made += 1
        nxt, s = decide(outcome, s, lim, caps, jitter=0.5)
        if isinstance(nxt, RunTools):
            assert all(c.complete for c in nxt.calls)
            assert not (isinstance(outcome, Response) and outcome.stop_reason == "refusal")
            unusable = {b.id for b in nxt.assistant.tool_uses if not b.complete}
            assert unusable == {r.tool_use_id for r in nxt.answered}  # answered, never run
            s = after_tools(s, caps)
        if isinstance(nxt, Continue):
            assert all(b.complete for m in nxt.append for b in m.tool_uses)
        if isinstance(nxt, CandidateStop):
            nxt, s = on_stop_hooks(None, nxt.assistant, s, lim)
        if isinstance(nxt, Finish):
            finished = True
            break
    assert s.turns <= lim.max_turns
    # a run can only go on without counting a turn for a bounded number of calls (retries etc.)
    assert finished or s.turns > 0 or calls_made <= 10 + 3 + 2 + 2 + 1 + 2
    if not finished:
        assert calls_made == len(outcomes)


def test_sanitize_leaves_complete_messages_alone():
    m = Message("assistant", (TextBlock("a"), call()))
    assert sanitize(m) is m


def test_stop_failure_names():
    from loopwright.policy.retry import stop_failure

    assert stop_failure("completed", None) is None and stop_failure("max_output_tokens", None) == "max_output_tokens"
    assert stop_failure("api_error", err("overloaded")) == "overloaded"
    assert stop_failure("api_error", err("not_found")) == "model_not_found"
    assert stop_failure("authentication_failed", err("permission")) == "authentication_failed"


def test_the_malformed_input_in_errors_is_escaped_for_terminals():
    s = START
    for _ in range(3):
        nxt, s = decide(resp(bad(raw="\x1b[2J\u202e{oops\n")), s, LIM, CAPS)
    [line] = nxt.errors
    assert "\x1b" not in line and "\u202e" not in line and "\n" not in line and "\\u001b[2J" in line
