"""Injected faults surface in the official SDK exactly as the real API's would (anthropic-api.md §4)."""

from __future__ import annotations

import json
import socket

import anthropic
import pytest

from loopwright.testing import Simulator
from sdkclients import HTTP, sdk

ASK = {"model": "claude-sonnet-5", "max_tokens": 256, "messages": [{"role": "user", "content": "hi"}]}




def stream_final(client: anthropic.Anthropic) -> anthropic.types.Message:
    with client.messages.stream(**ASK) as stream:
        return stream.get_final_message()


@pytest.mark.parametrize(
    ("status", "exc_class", "error_type"),
    [
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
        (403, anthropic.PermissionDeniedError, "permission_error"),
        (404, anthropic.NotFoundError, "not_found_error"),
        (413, anthropic.APIStatusError, "request_too_large"),
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (504, anthropic.APIStatusError, "timeout_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
def test_status_faults_raise_the_sdk_class(status: int, exc_class: type, error_type: str, stream: bool) -> None:
    with Simulator([{"fault": {"status": status}}]) as sim:
        with pytest.raises(exc_class) as caught:
            stream_final(sdk(sim)) if stream else sdk(sim).messages.create(**ASK)
        (rec,) = sim.requests
    err = caught.value
    assert (err.status_code, err.type, err.request_id) == (status, error_type, rec.request_id)
    assert rec.response_status == status
    assert err.body["type"] == "error" and err.body["request_id"] == rec.request_id


def test_fault_message_and_prompt_too_long_text() -> None:
    message = "prompt is too long: 200082 tokens > 200000 maximum"
    with Simulator([{"fault": {"status": 400, "message": message}}]) as sim:
        with pytest.raises(anthropic.BadRequestError) as caught:
            sdk(sim).messages.create(**ASK)
    assert caught.value.api_message == message and caught.value.type == "invalid_request_error"


def test_retry_after_ms_is_honoured_and_retry_count_rises() -> None:
    fault = {"fault": {"status": 529, "retry_after_ms": 10, "error_type": "overloaded_error", "message": "Overloaded"}}
    with Simulator([fault, fault, {"text": "third time lucky"}]) as sim:
        message = stream_final(sdk(sim, max_retries=2))
        recs = sim.message_requests
    assert message.content[0].text == "third time lucky"
    assert [r.retry_count for r in recs] == [0, 1, 2]
    assert [r.response_status for r in recs] == [529, 529, 200]


def test_retry_after_seconds_is_honoured() -> None:
    with Simulator([{"fault": {"status": 429, "retry_after": 0.01}}, {"text": "ok"}]) as sim:
        assert sdk(sim, max_retries=1).messages.create(**ASK).content[0].text == "ok"
        assert [r.retry_count for r in sim.requests] == [0, 1]


def test_retry_headers_are_sent_as_given() -> None:
    fault = {"fault": {"status": 529, "retry_after": 1, "retry_after_ms": 30, "should_retry": False}, "headers": {"x-extra": "yes"}}
    with Simulator([fault]) as sim:
        response = HTTP.post(f"{sim.base_url}/v1/messages", json=ASK, headers={"x-api-key": "k"})
    assert response.status_code == 529
    headers = response.headers
    assert (headers["retry-after"], headers["retry-after-ms"], headers["x-should-retry"], headers["x-extra"]) == ("1", "30", "false", "yes")
    assert headers["request-id"] == response.json()["request_id"]


def test_x_should_retry_false_stops_sdk_retries() -> None:
    with Simulator([{"fault": {"status": 500, "should_retry": False}}, {"text": "never"}]) as sim:
        with pytest.raises(anthropic.InternalServerError):
            sdk(sim, max_retries=2).messages.create(**ASK)
        assert len(sim.requests) == 1
        assert sim.remaining() == [{"text": "never"}]


def test_x_should_retry_true_makes_a_400_retried() -> None:
    with Simulator([{"fault": {"status": 400, "should_retry": True, "retry_after_ms": 10}}, {"text": "ok"}]) as sim:
        assert sdk(sim, max_retries=1).messages.create(**ASK).content[0].text == "ok"
        assert [r.retry_count for r in sim.requests] == [0, 1]


def test_spend_limit_429_carries_its_error_code() -> None:
    with Simulator([{"fault": {"status": 429, "error_code": "enforced_spend_limit_reached"}}]) as sim:
        with pytest.raises(anthropic.EnforcedSpendLimitReachedError) as caught:
            sdk(sim).messages.create(**ASK)
    err = caught.value
    assert isinstance(err, anthropic.RateLimitError) and err.status_code == 429
    assert err.error_code == "enforced_spend_limit_reached"
    assert err.body["error"]["details"] == {"error_code": "enforced_spend_limit_reached"}


def test_fault_named_only_by_error_type_gets_its_status() -> None:
    with Simulator([{"fault": {"error_type": "overloaded_error"}}]) as sim:
        with pytest.raises(anthropic.OverloadedError):
            sdk(sim).messages.create(**ASK)


def test_sse_error_mid_stream_raises_status_error_and_is_not_retried() -> None:
    spec = {"text": "partial answer", "fault": {"sse_error": {"type": "overloaded_error", "message": "Overloaded"}, "after_blocks": 1}}
    with Simulator([spec, {"text": "unused"}]) as sim:
        with pytest.raises(anthropic.APIStatusError) as caught:
            stream_final(sdk(sim, max_retries=2))
        assert len(sim.requests) == 1 and sim.requests[0].response_status == 200
    err = caught.value
    assert (err.status_code, err.type) == (200, "overloaded_error")
    assert not isinstance(err, anthropic.OverloadedError)


def test_sse_error_frames_follow_the_finished_blocks() -> None:
    spec = {"fault": {"sse_error": {"type": "api_error", "message": "boom"}, "after_blocks": 2}}
    with Simulator([spec]) as sim:
        text = HTTP.post(f"{sim.base_url}/v1/messages", json=ASK | {"stream": True}, headers={"x-api-key": "k"}).text
    names = [line.removeprefix("event: ") for line in text.splitlines() if line.startswith("event: ")]
    assert names.count("content_block_stop") == 2 and names[-1] == "error"
    assert "message_delta" not in names and "message_stop" not in names
    assert '"message":"boom"' in text


def test_sse_error_on_a_non_streaming_request_becomes_its_status() -> None:
    with Simulator([{"fault": {"sse_error": {"type": "overloaded_error", "message": "Overloaded"}}}]) as sim:
        with pytest.raises(anthropic.OverloadedError):
            sdk(sim).messages.create(**ASK)


def test_cut_stream_yields_no_stop_reason_and_closes_the_connection() -> None:
    spec = {"content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}], "fault": {"cut": True, "after_blocks": 1}}
    with Simulator([spec, {"text": "next"}]) as sim:
        client = sdk(sim)
        message = stream_final(client)
        assert stream_final(client).content[0].text == "next"
        assert sim.connections == 2  # the cut connection was not reused
    assert message.stop_reason is None
    assert [b.text for b in message.content] == ["first"]


def test_cut_non_streaming_body_is_a_connection_error() -> None:
    with Simulator([{"text": "a long enough answer", "fault": {"cut": True}}]) as sim:
        with pytest.raises(anthropic.APIConnectionError):
            sdk(sim).messages.create(**ASK)


def test_connection_reset_is_a_connection_error_and_retried() -> None:
    with Simulator([{"fault": {"reset": True}}, {"fault": {"reset": True}}, {"text": "after reset"}]) as sim:
        with pytest.raises(anthropic.APIConnectionError):
            stream_final(sdk(sim))
        assert sim.requests[0].response_status is None
        # The SDK retries connection errors; its back-off is ~0.5 s, so one retry only.
        assert sdk(sim, max_retries=1).messages.create(**ASK).content[0].text == "after reset"
        assert [r.retry_count for r in sim.requests] == [0, 0, 1]
        assert sim.errors == []


def test_reset_is_a_tcp_rst_not_a_clean_close() -> None:
    body = json.dumps(ASK).encode()
    head = f"POST /v1/messages HTTP/1.1\r\nhost: sim\r\nx-api-key: k\r\ncontent-length: {len(body)}\r\n\r\n"
    with Simulator([{"fault": {"reset": True}}]) as sim:
        with socket.create_connection(("127.0.0.1", sim.port), timeout=5) as sock:
            sock.sendall(head.encode() + body)
            with pytest.raises(ConnectionResetError):
                while sock.recv(4096):  # a FIN would end this loop quietly with b""
                    pass


def test_delay_still_answers() -> None:
    with Simulator([{"text": "slow", "delay": 0.02}, {"delay": 0.02, "fault": {"status": 529}}]) as sim:
        assert stream_final(sdk(sim)).content[0].text == "slow"
        with pytest.raises(anthropic.OverloadedError):
            sdk(sim).messages.create(**ASK)


def test_delay_longer_than_the_client_timeout_times_out() -> None:
    with Simulator([{"text": "too slow", "delay": 5}]) as sim:
        with pytest.raises(anthropic.APITimeoutError):
            sdk(sim, timeout=0.5).messages.create(**ASK)
    # stop() woke the sleeping handler: leaving the block did not wait out the delay.
    assert sim.requests[0].response_status is None


def test_auth_accepts_api_key_or_bearer_and_rejects_neither() -> None:
    with Simulator([{"text": "ok", "repeat": 2}]) as sim:
        url = f"{sim.base_url}/v1/messages"
        by_key = HTTP.post(url, json=ASK, headers={"x-api-key": "sk-test", "anthropic-version": "2023-06-01"})
        by_bearer = HTTP.post(url, json=ASK, headers={"authorization": "Bearer sk-test"})
        anonymous = HTTP.post(url, json=ASK)
        assert len(sim.requests) == 3
    assert by_key.status_code == by_bearer.status_code == 200
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["type"] == "authentication_error"
    assert anonymous.headers["request-id"].startswith("req_sim_")


def test_unknown_path_is_404_not_found() -> None:
    with Simulator([]) as sim:
        response = HTTP.post(f"{sim.base_url}/v1/complete", json={}, headers={"x-api-key": "k"})
        got = HTTP.get(f"{sim.base_url}/v1/messages", headers={"x-api-key": "k"})
    assert response.status_code == got.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


def test_no_rule_matched_is_a_loud_400_and_recorded() -> None:
    with Simulator({"rules": [{"match": {"model": "claude-other"}, "responses": [{"text": "x"}]}]}) as sim:
        with pytest.raises(anthropic.BadRequestError) as caught:
            sdk(sim).messages.create(**ASK)
        assert [r.request_id for r in sim.unmatched] == [caught.value.request_id]
        assert sim.remaining() == [{"text": "x"}]
    assert caught.value.api_message.startswith("simulator: no rule matched")
    assert "claude-sonnet-5" in caught.value.api_message
