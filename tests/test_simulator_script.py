"""Script rules, request validation, lifecycle and the `python -m` CLI of the simulator."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anthropic
import httpx
import pytest

from loopwright.testing import Script, ScriptError, Simulator
from loopwright.testing.simulator.validate import check_request
from sdkclients import HTTP, sdk

ASK = {"model": "claude-sonnet-5", "max_tokens": 256, "messages": [{"role": "user", "content": "hi"}]}
BASH = {"name": "Bash", "description": "shell", "input_schema": {"type": "object"}}
READ = {"name": "Read", "description": "read", "input_schema": {"type": "object"}}




def text(client: anthropic.Anthropic, **ask: object) -> str:
    return client.messages.create(**(ASK | ask)).content[0].text


# --- consumption --------------------------------------------------------------------------


def test_repeat_counts_then_next_response_then_unmatched() -> None:
    with Simulator([{"text": "a", "repeat": 2}, {"text": "b"}]) as sim:
        client = sdk(sim)
        assert [text(client) for _ in range(3)] == ["a", "a", "b"]
        assert sim.remaining() == []
        with pytest.raises(anthropic.BadRequestError):
            client.messages.create(**ASK)
        assert len(sim.unmatched) == 1


def test_remaining_reports_what_is_left_of_a_repeat() -> None:
    with Simulator([{"text": "a", "repeat": 3}, {"text": "b"}]) as sim:
        text(sdk(sim))
        assert sim.remaining() == [{"text": "a", "repeat": 2}, {"text": "b"}]


def test_repeat_forever_counts_as_used_once_served() -> None:
    with Simulator([{"text": "again", "repeat": -1}]) as sim:
        assert sim.remaining() == [{"text": "again", "repeat": -1}]
        client = sdk(sim)
        assert {text(client) for _ in range(5)} == {"again"}
        assert sim.remaining() == []


def test_rules_match_on_model_tools_system_last_user_and_stream() -> None:
    script = {"rules": [
        {"match": {"model": "claude-haiku-4-5"}, "responses": [{"text": "by model", "repeat": -1}]},
        {"match": {"tools_present": ["Bash", "Read"]}, "responses": [{"text": "by tools", "repeat": -1}]},
        {"match": {"has_tools": True}, "responses": [{"text": "has tools", "repeat": -1}]},
        {"match": {"system_contains": "pirate"}, "responses": [{"text": "by system", "repeat": -1}]},
        {"match": {"last_user_contains": "exit code 0"}, "responses": [{"text": "by user text", "repeat": -1}]},
        {"match": {"stream": True}, "responses": [{"text": "by stream", "repeat": -1}]},
        {"responses": [{"text": "fallback", "repeat": -1}]},
    ]}
    with Simulator(script) as sim:
        client = sdk(sim)
        assert text(client, model="claude-haiku-4-5", tools=[BASH, READ]) == "by model"
        assert text(client, tools=[READ, BASH]) == "by tools"
        assert text(client, tools=[BASH]) == "has tools"
        assert text(client, system=[{"type": "text", "text": "You are a pirate."}]) == "by system"
        assert text(client, system="talk like a pirate") == "by system"
        tool_turn = [
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "exit code 0"}]},
        ]
        assert text(client, messages=tool_turn) == "by user text"
        with client.messages.stream(**ASK) as stream:
            assert stream.get_final_text() == "by stream"
        assert text(client) == "fallback"


def test_a_used_up_rule_falls_through_to_the_next() -> None:
    script = {"rules": [
        {"match": {"model": "claude-sonnet-5"}, "responses": [{"text": "specific"}]},
        {"responses": [{"text": "general"}]},
    ]}
    with Simulator(script) as sim:
        client = sdk(sim)
        assert [text(client), text(client)] == ["specific", "general"]


def test_retry_count_rule_scripts_fail_then_succeed_per_attempt() -> None:
    script = {"rules": [
        {"match": {"retry_count": 0}, "responses": [{"fault": {"status": 529, "retry_after_ms": 5}, "repeat": -1}]},
        {"match": {"retry_count": 1}, "responses": [{"text": "on retry", "repeat": -1}]},
    ]}
    with Simulator(script) as sim:
        assert text(sdk(sim, max_retries=1)) == "on retry"
        assert [r.response_status for r in sim.requests] == [529, 200]


def test_reset_replaces_the_script_and_clears_records() -> None:
    with Simulator([{"tool_use": {"name": "Bash", "input": {}}}]) as sim:
        first = sdk(sim).messages.create(**ASK)
        sim.reset([{"tool_use": {"name": "Bash", "input": {}}}])
        assert sim.requests == [] and sim.unmatched == [] and sim.connections == 0
        second = sdk(sim).messages.create(**ASK)
        assert len(sim.requests) == 1
    assert first.content[0].id == second.content[0].id == "toolu_sim_0001"


def test_stop_closes_idle_connections_and_start_reuses_the_port() -> None:
    sim = Simulator([{"text": "ok", "repeat": -1}]).start()
    url = sim.base_url
    with httpx.Client(base_url=url, headers={"x-api-key": "k"}, verify=False) as client:
        assert client.post("/v1/messages", json=ASK).status_code == 200
        sim.stop()
        with pytest.raises(httpx.TransportError):
            client.post("/v1/messages", json=ASK)
        sim.start()
        try:
            assert sim.base_url == url
            assert client.post("/v1/messages", json=ASK).status_code == 200
        finally:
            sim.stop()
    assert sim.errors == []


# --- script parsing -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "where"),
    [
        ([{"txt": "typo"}], "rules[0].responses[0]: unknown key(s) ['txt']"),
        ([{"text": "x", "repeat": 0}], "rules[0].responses[0].repeat"),
        ([{"fault": {"status": 529, "reset": True}}], "rules[0].responses[0].fault: give exactly one"),
        ([{"fault": {"status": 200}}], "rules[0].responses[0].fault.status"),
        ([{"text": "x", "content": []}], "either 'content' or 'text'"),
        ([{"content": [{"type": "tool_use"}]}], "rules[0].responses[0].content[0]: a tool_use block needs 'name'"),
        ([{"text": "x", "fault": {"cut": True, "after_blocks": 2}}], "after_blocks: 2 > 1 blocks"),
        ({"rules": [{"match": {"modle": "x"}, "responses": []}]}, "rules[0].match: unknown key 'modle'"),
        ({"rules": [{"match": {"stream": "yes"}, "responses": []}]}, "rules[0].match.stream: wrong type"),
        ({"rulez": []}, "unknown key(s) ['rulez']"),
        ("not a script", "expected a dict or a list"),
    ],
)
def test_bad_scripts_fail_at_construction_naming_the_place(script: object, where: str) -> None:
    with pytest.raises(ScriptError) as caught:
        Simulator(script)  # type: ignore[arg-type]
    assert where in str(caught.value)


def test_script_from_file(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"rules": [{"match": {"stream": False}, "responses": [{"text": "from file"}]}]}))
    with Simulator(Script.from_file(good)) as sim:
        assert text(sdk(sim)) == "from file"
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ScriptError, match="bad.json: invalid JSON"):
        Script.from_file(bad)
    with pytest.raises(ScriptError, match="missing.json: cannot read"):
        Script.from_file(tmp_path / "missing.json")


# --- request validation -------------------------------------------------------------------

USE = {"type": "tool_use", "id": "toolu_A", "name": "Bash", "input": {}}
USE_B = {"type": "tool_use", "id": "toolu_B", "name": "Bash", "input": {}}


def result(tool_use_id: str) -> dict:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": "done"}


def convo(*turns: object) -> list[dict]:
    roles = ["user", "assistant"]
    return [{"role": roles[i % 2], "content": content} for i, content in enumerate(turns)]


def test_tool_use_without_result_is_the_api_400() -> None:
    with Simulator([{"text": "never"}]) as sim:
        with pytest.raises(anthropic.BadRequestError) as caught:
            sdk(sim).messages.create(**ASK | {"messages": convo("go", [USE, USE_B], [result("toolu_A")])})
        assert sim.requests[0].response_status == 400 and sim.remaining() == [{"text": "never"}]
    assert caught.value.type == "invalid_request_error"
    assert caught.value.api_message == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_B."
        " Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )


def test_unexpected_tool_result_is_the_api_400() -> None:
    messages = convo("go", [USE], [result("toolu_A"), result("toolu_X")])
    with Simulator([]) as sim:
        with pytest.raises(anthropic.BadRequestError) as caught:
            sdk(sim).messages.create(**ASK | {"messages": messages})
    assert caught.value.api_message == (
        "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_X."
        " Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    )


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (convo("go", [USE, USE_B], "no results"), "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_A, toolu_B."),
        (convo("go", [USE], [{"type": "text", "text": "first"}, result("toolu_A")]), "messages.1: `tool_use` ids were found"),
        (convo("go", [USE]), "messages.1: `tool_use` ids were found"),
        (convo([result("toolu_A")]), "messages.0.content.0: unexpected `tool_use_id`"),
        (convo("go", "plain", [result("toolu_A")]), "messages.2.content.0: unexpected `tool_use_id`"),
        (convo("go", "ok", []), "messages.2: all messages must have non-empty content"),
        (convo("go", "ok", ""), "messages.2: all messages must have non-empty content"),
        ([{"role": "assistant", "content": "hi"}], 'messages: first message must use the "user" role'),
        ([{"role": "system", "content": "hi"}], "messages.0.role: Input should be 'user' or 'assistant'"),
        ([], "messages: at least one message is required"),
    ],
)
def test_validation_table(messages: list[dict], expected: str) -> None:
    problem = check_request({"model": "m", "max_tokens": 5, "messages": messages})
    assert problem is not None and problem.startswith(expected)


@pytest.mark.parametrize(
    "messages",
    [
        convo("go", [USE, USE_B], [result("toolu_B"), result("toolu_A"), {"type": "text", "text": "after"}]),
        convo("go", "partial answer", "continue", []),  # a final assistant message may be empty
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],  # the API merges these
        convo("go", [USE]) + [{"role": "assistant", "content": "more"}, {"role": "user", "content": [result("toolu_A")]}],
    ],
)
def test_valid_conversations_pass(messages: list[dict]) -> None:
    assert check_request({"model": "m", "max_tokens": 5, "messages": messages}) is None


def test_merged_user_messages_keep_tool_results_first() -> None:
    messages = convo("go", [USE]) + [{"role": "user", "content": [result("toolu_A")]}, {"role": "user", "content": "now go on"}]
    assert check_request({"model": "m", "max_tokens": 5, "messages": messages}) is None


@pytest.mark.parametrize("missing", ["model", "max_tokens", "messages"])
def test_missing_required_field_is_a_400(missing: str) -> None:
    body = {k: v for k, v in ASK.items() if k != missing}
    with Simulator([{"text": "x"}]) as sim:
        response = HTTP.post(f"{sim.base_url}/v1/messages", json=body, headers={"x-api-key": "k"})
        assert len(sim.requests) == 1
    assert response.status_code == 400
    assert response.json()["error"] == {"type": "invalid_request_error", "message": f"{missing}: Field required"}


def test_count_tokens_does_not_need_max_tokens_but_is_validated() -> None:
    assert check_request({"model": "m", "messages": [{"role": "user", "content": "x"}]}, count_tokens=True) is None
    assert check_request({"model": "m", "messages": convo("go", [USE])}, count_tokens=True) is not None


def test_validation_can_be_switched_off() -> None:
    with Simulator([{"text": "lenient"}], validate=False) as sim:
        assert text(sdk(sim), messages=convo("go", [USE])) == "lenient"


def test_a_body_that_is_not_json_is_a_400() -> None:
    with Simulator([{"text": "x"}], validate=False) as sim:
        response = HTTP.post(f"{sim.base_url}/v1/messages", content=b"{oops", headers={"x-api-key": "k"})
        (rec,) = sim.requests
    assert response.status_code == 400 and rec.body is None and rec.raw == b"{oops"


# --- packaging and CLI --------------------------------------------------------------------


def test_importing_loopwright_testing_is_light() -> None:
    code = (
        "import sys, loopwright.testing as t;"
        "assert 'http.server' not in sys.modules and 'anthropic' not in sys.modules, 'heavy import';"
        "assert {'Simulator', 'Script'} <= set(t.__all__);"
        "assert t.Simulator.__name__ == 'Simulator' and 'Script' in dir(t)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)


def _cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "loopwright.testing.simulator", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_cli_serves_a_script_until_signalled(tmp_path: Path, signum: int) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from the cli"}]))
    port = _free_port()
    with _cli("--script", str(script), "--port", str(port)) as proc:  # closes the pipes on exit
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == f"listening on http://127.0.0.1:{port}\n"
            response = HTTP.post(f"http://127.0.0.1:{port}/v1/messages", json=ASK, headers={"x-api-key": "k"})
            assert response.json()["content"] == [{"type": "text", "text": "from the cli"}]
            os.kill(proc.pid, signum)
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()


def test_cli_with_a_bad_script_exits_2_with_one_line(tmp_path: Path) -> None:
    script = tmp_path / "broken.json"
    script.write_text(json.dumps([{"txet": "typo"}]))
    proc = _cli("--script", str(script))
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and out == ""
    assert len(err.splitlines()) == 1 and "broken.json" in err and "txet" in err
