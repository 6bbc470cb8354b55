"""Each Agent SDK scenario of `sdkshapes.py`, run against loopwright, gives the SDK the same kinds
of lines in the same order, with the keys the CLI bundled with the SDK sends (recorded in
`fixtures/sdk_shapes.json`), minus the ones named below with the reason loopwright leaves them out.
A protocol change on either side shows up here."""

import json

import pytest

pytest.importorskip("claude_agent_sdk")

import sdkshapes  # noqa: E402

RECORDED = json.loads(sdkshapes.FIXTURE.read_text())["scenarios"]

# Keys the bundled CLI sends that loopwright does not, and why; the SDK reads none of them.
NOT_SENT = {
    # Anthropic-account and product features: no account here, no fast mode, no effort levels
    "analytics_disabled", "capabilities", "fast_mode_disabled_reason", "fast_mode_state", "served_by_anthropic",
    "product_feedback_disabled", "ultrathink_available", "ultrathink_typed_raises", "per_turn_effort_active",
    "view_mode", "messaging_socket_path", "terminal_slash_commands",
    # the CLI's own timing and bookkeeping (loopwright's are duration_ms and duration_api_ms)
    "first_content_frame_ms", "time_to_request_ms", "ttft_ms", "ttft_stream_ms", "result_index",
    "queued_turn_count", "model_usage_since_last_result", "begun_message_ids", "api_message_id",
    "thinking_display", "request_id", "timestamp", "safety_stops", "subagent_stats", "tool_result_meta",
    "tool_use_result", "message.context_management", "message.stop_details",
    # init facts loopwright reports elsewhere (memory files in the transcript, the sandbox in --verbose)
    "additional_directories", "memory_paths", "original_cwd", "sandbox_enabled",
    # can_use_tool: loopwright names the paths a call would touch in decision_reason
    "request.blocked_path",
    # initialize's answer: loopwright asks nothing of a person but through can_use_tool
    "response.pending_permission_requests", "response.pending_user_dialog_requests",
}
# Lines the SDK does not turn into messages of its own, and the bundled CLI's extra system lines.
SKIPPED = ("system/per_turn_effort_changed", "system/status", "system/session_state_changed", "stream_event/")
# Where the order differs on purpose: after an accepted StructuredOutput call the bundled CLI ends
# the turn at once; loopwright lets the model say its last word (one more request).
ORDER_DIFFERS = {"structured": ["system/init", "assistant", "user", "assistant", "result/success"]}


def messages(order):
    return [k for k in order if not k.startswith(SKIPPED) and not k.startswith("control_response")]


@pytest.fixture(scope="module")
def ours():
    return {name: sdkshapes.run(name, sdkshapes.loopwright_cli(), sdkshapes.ENV) for name in sdkshapes.SCENARIOS}


@pytest.mark.parametrize("scenario", sorted(sdkshapes.SCENARIOS))
def test_the_sdk_gets_the_same_messages_in_the_same_order(ours, scenario):
    expected = ORDER_DIFFERS.get(scenario, messages(RECORDED[scenario]["order"]))
    assert messages(ours[scenario]["order"]) == expected
    streamed = [k for k in RECORDED[scenario]["order"] if k.startswith("stream_event/")]
    assert [k for k in ours[scenario]["order"] if k.startswith("stream_event/")] == streamed


@pytest.mark.parametrize("scenario", sorted(sdkshapes.SCENARIOS))
def test_each_line_has_the_keys_the_bundled_cli_sends(ours, scenario):
    got = ours[scenario]["keys"]
    missing = {}
    for kind, keys in RECORDED[scenario]["keys"].items():
        if kind.startswith(("system/per_turn_effort_changed", "system/status")):
            continue  # lines loopwright does not send (no effort levels; no status to report)
        lacking = set(keys) - NOT_SENT - set(got.get(kind, ()))
        if lacking:
            missing[kind] = sorted(lacking)
    assert missing == {}


def test_the_initialize_answer_and_control_lines_are_shaped_as_recorded(ours):
    for scenario in sdkshapes.SCENARIOS:
        assert ours[scenario]["order"][0] == "control_response/success"  # initialize is answered first
    assert "control_request/can_use_tool" in ours["ask"]["order"]
